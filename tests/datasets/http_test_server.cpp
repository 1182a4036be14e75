// The fetch tests' HTTP server (see http_test_server.h): a thread that polls the listening socket
// so that the destructor can stop it, and answers each connection in turn.
#include "tests/datasets/http_test_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

namespace posgrad::test {

namespace {

int bind_local(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    throw std::runtime_error("bind(127.0.0.1) failed");
  }
  return fd;
}

int port_of(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

bool send_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t sent = ::send(fd, data, n, MSG_NOSIGNAL);
    if (sent <= 0) return false;
    data += sent;
    n -= static_cast<size_t>(sent);
  }
  return true;
}

}  // namespace

int unused_local_port() {
  const int fd = bind_local(0);
  const int port = port_of(fd);
  ::close(fd);
  return port;
}

HttpTestServer::HttpTestServer() {
  listen_fd_ = bind_local(0);
  port_ = port_of(listen_fd_);
  if (::listen(listen_fd_, 8) != 0) throw std::runtime_error("listen() failed");
  thread_ = std::thread([this] { run(); });
}

HttpTestServer::~HttpTestServer() {
  stop_ = true;
  thread_.join();
  ::close(listen_fd_);
}

std::string HttpTestServer::base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }

void HttpTestServer::serve(const std::string& name, std::string body, std::string content_type) {
  std::lock_guard lock(mutex_);
  routes_[name] = Route{std::move(body), std::move(content_type)};
}

void HttpTestServer::drop_after(const std::string& name, size_t bytes, int times) {
  std::lock_guard lock(mutex_);
  routes_.at(name).drop_at = bytes;
  routes_.at(name).drops_left = times;
}

void HttpTestServer::fail_with(const std::string& name, int status, int times) {
  std::lock_guard lock(mutex_);
  routes_.at(name).fail_status = status;
  routes_.at(name).fails_left = times;
}

std::vector<std::string> HttpTestServer::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

void HttpTestServer::run() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    answer(fd);
    ::close(fd);
  }
}

void HttpTestServer::answer(int fd) {
  std::string request;
  char buf[4096];
  while (request.find("\r\n\r\n") == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 2000) <= 0) return;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    request.append(buf, static_cast<size_t>(n));
  }
  // "GET /name HTTP/1.1"
  const size_t sp1 = request.find(' '), sp2 = request.find(' ', sp1 + 1);
  const std::string path = request.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string name = path.substr(1);
  size_t from = 0;
  std::string seen = "GET " + path;
  for (const char* key : {"\r\nRange: bytes=", "\r\nrange: bytes="}) {
    const size_t at = request.find(key);
    if (at != std::string::npos) {
      from = std::stoull(request.substr(at + std::strlen(key)));
      seen += " Range: bytes=" + std::to_string(from) + "-";
    }
  }
  Route route;
  bool found = false;
  {
    std::lock_guard lock(mutex_);
    requests_.push_back(seen);
    auto it = routes_.find(name);
    if (it != routes_.end()) {
      found = true;
      route = it->second;
      if (it->second.fails_left > 0)
        --it->second.fails_left;
      else if (it->second.drops_left > 0)
        --it->second.drops_left;
    }
  }
  std::string head;
  std::string body;
  if (!found) {
    body = "not found\n";
    head = "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n";
  } else if (route.fails_left > 0) {
    body = "error " + std::to_string(route.fail_status) + "\n";
    head = "HTTP/1.1 " + std::to_string(route.fail_status) + " Test Error\r\nContent-Type: text/plain\r\n";
    route.drops_left = 0;
  } else if (from > 0 && !ignore_range_) {
    if (from >= route.body.size()) {
      head = "HTTP/1.1 416 Range Not Satisfiable\r\n";
      head += "Content-Range: bytes */" + std::to_string(route.body.size()) + "\r\n";
    } else {
      body = route.body.substr(from);
      head = "HTTP/1.1 206 Partial Content\r\nContent-Type: " + route.content_type + "\r\n";
      head += "Content-Range: bytes " + std::to_string(from) + "-" + std::to_string(route.body.size() - 1) + "/" +
              std::to_string(route.body.size()) + "\r\n";
    }
  } else {
    body = route.body;
    head = "HTTP/1.1 200 OK\r\nContent-Type: " + route.content_type + "\r\nAccept-Ranges: bytes\r\n";
  }
  head += "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  size_t send_bytes = body.size();
  if (found && route.drops_left > 0 && route.drop_at < body.size()) send_bytes = route.drop_at;
  if (!send_all(fd, head.data(), head.size())) return;
  send_all(fd, body.data(), send_bytes);
}

}  // namespace posgrad::test
