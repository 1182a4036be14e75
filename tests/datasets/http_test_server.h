// A small HTTP/1.1 server for the fetch tests: listens on 127.0.0.1 on a port the system picks,
// serves the bodies a test gives it (with Range requests: 206 and Content-Range), and can
// misbehave on purpose: close the connection part-way through a body, answer with an HTML page,
// ignore Range, answer an error status. One connection at a time, `Connection: close` after every response.
// Deliberately not a general server: no keep-alive, chunking, HTTPS or request bodies.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace posgrad::test {

class HttpTestServer {
 public:
  HttpTestServer();   // listening when constructed
  ~HttpTestServer();  // stops the thread and closes the socket
  HttpTestServer(const HttpTestServer&) = delete;
  HttpTestServer& operator=(const HttpTestServer&) = delete;

  int port() const { return port_; }
  std::string base_url() const;  // "http://127.0.0.1:<port>/"

  // GET /<name> answers `body` with this Content-Type (other names: 404).
  void serve(const std::string& name, std::string body, std::string content_type = "application/octet-stream");
  // The next `times` answers for `name` announce the whole length but close after `bytes` of it.
  void drop_after(const std::string& name, size_t bytes, int times);
  // The next `times` answers for `name` are this HTTP status (e.g. 503) with a short text body.
  void fail_with(const std::string& name, int status, int times);
  void ignore_range(bool ignore) { ignore_range_ = ignore; }

  // Every request line and Range header seen ("GET /x" or "GET /x Range: bytes=10-").
  std::vector<std::string> requests() const;

 private:
  struct Route {
    std::string body, content_type;
    size_t drop_at = 0;
    int drops_left = 0;
    int fail_status = 0;
    int fails_left = 0;
  };
  void run();
  void answer(int fd);

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> ignore_range_{false};
  mutable std::mutex mutex_;
  std::map<std::string, Route> routes_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

// A port on 127.0.0.1 where nothing listens (bound, then closed).
int unused_local_port();

}  // namespace posgrad::test
