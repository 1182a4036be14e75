// libcurl easy transfers (see download.h). One attempt appends to the .part file from its current
// size (CURLOPT_RESUME_FROM_LARGE); a server that ignores the range starts the file over.
#include "datasets/fetch/download.h"

#include <curl/curl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <mutex>
#include <thread>

#include "tensor/error.h"

namespace posgrad::fetch {

namespace fs = std::filesystem;

fs::path partial_path(const fs::path& target) { return fs::path(target.string() + ".part"); }

namespace {

void global_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// What one attempt saw; the write callback fills it.
struct Attempt {
  FILE* out = nullptr;
  const fs::path* part = nullptr;
  int64_t start = 0;    // bytes already in the .part when the attempt began
  int64_t written = 0;  // bytes written by this attempt
  int64_t max_bytes = 0;
  bool checked_type = false;
  CURL* curl = nullptr;
  std::string refusal;      // why the callback refused the file
  std::string write_error;  // why the .part could not be written (a full disk): kept for a resume
  const ProgressFn* progress = nullptr;
  int64_t total = -1;
};

bool is_html(const char* content_type) {
  if (content_type == nullptr) return false;
  std::string t(content_type);
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return t.rfind("text/html", 0) == 0 || t.rfind("application/xhtml", 0) == 0;
}

size_t on_data(char* data, size_t size, size_t count, void* user) {
  auto& a = *static_cast<Attempt*>(user);
  const size_t n = size * count;
  if (!a.checked_type) {
    a.checked_type = true;
    long code = 0;
    curl_easy_getinfo(a.curl, CURLINFO_RESPONSE_CODE, &code);
    char* type = nullptr;
    curl_easy_getinfo(a.curl, CURLINFO_CONTENT_TYPE, &type);
    if (is_html(type)) {
      a.refusal = fmt::format("the server sent an HTML page (Content-Type: {}) instead of the file", type);
      return 0;
    }
    if (a.start > 0 && code == 200) {  // the server ignored the Range request: start over
      if (std::fflush(a.out) != 0 || ::ftruncate(fileno(a.out), 0) != 0 || std::fseek(a.out, 0, SEEK_SET) != 0) {
        a.refusal = fmt::format("cannot restart {}: {}", a.part->string(), std::strerror(errno));
        return 0;
      }
      a.start = 0;
    }
  }
  if (a.max_bytes > 0 && a.start + a.written + static_cast<int64_t>(n) > a.max_bytes) {
    a.refusal = fmt::format("the file is larger than its cap of {} bytes", a.max_bytes);
    return 0;
  }
  if (std::fwrite(data, 1, n, a.out) != n) {
    a.write_error = fmt::format("cannot write {}: {}; free some space (or raise the file-size limit)",
                                a.part->string(), std::strerror(errno));
    return 0;
  }
  a.written += static_cast<int64_t>(n);
  return n;
}

int on_progress(void* user, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
  auto& a = *static_cast<Attempt*>(user);
  if (total > 0) a.total = a.start + static_cast<int64_t>(total);
  if (a.progress != nullptr && *a.progress) (*a.progress)(a.start + a.written, a.total);
  (void)now;
  return 0;
}

int64_t file_size_or_zero(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

// Retry: another attempt may help; Pause: the same after a pause. Keep: stop, but the .part is a
// good prefix for a later run.
enum class Outcome { Done, Retry, Pause, Keep, Fail };

// One transfer; on failure sets `why` and says whether another attempt may help.
Outcome attempt_once(const std::string& url, const fs::path& part, const DownloadOptions& o, std::string& why) {
  Attempt a;
  a.part = &part;
  a.start = file_size_or_zero(part);
  a.max_bytes = o.max_bytes;
  a.progress = &o.progress;
  if (o.max_bytes > 0 && a.start > o.max_bytes) {
    fs::remove(part);
    a.start = 0;
  }
  a.out = std::fopen(part.c_str(), "ab");
  if (a.out == nullptr) fail("cannot write {}: {}", part.string(), std::strerror(errno));

  CURL* curl = curl_easy_init();
  if (curl == nullptr) {
    std::fclose(a.out);
    fail("libcurl could not start a transfer");
  }
  a.curl = curl;
  char error[CURL_ERROR_SIZE] = {};
  const char* protocols = o.allow_plain_http ? "http,https" : "https";
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, protocols);
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, protocols);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
  curl_easy_setopt(curl, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, static_cast<long>(o.connect_timeout_s));
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, static_cast<long>(o.stall_timeout_s));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "posgrad-data");
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &a);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &a);
  if (a.start > 0) curl_easy_setopt(curl, CURLOPT_RESUME_FROM_LARGE, static_cast<curl_off_t>(a.start));
  if (o.max_bytes > 0) curl_easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(o.max_bytes));

  const CURLcode rc = curl_easy_perform(curl);
  long code = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_cleanup(curl);
  const bool closed = std::fclose(a.out) == 0;
  if (rc == CURLE_OK && !closed)
    a.write_error = fmt::format("cannot write {}: {}; free some space (or raise the file-size limit)", part.string(),
                                std::strerror(errno));
  if (!a.write_error.empty()) {
    why = a.write_error;
    return Outcome::Keep;
  }
  if (rc == CURLE_OK) return Outcome::Done;
  if (!a.refusal.empty()) {
    why = a.refusal;
    return Outcome::Fail;
  }
  const std::string detail = error[0] != '\0' ? std::string(error) : curl_easy_strerror(rc);
  switch (rc) {
    case CURLE_HTTP_RETURNED_ERROR:
      if (code == 416 && a.start > 0) {  // the range is past the end: the .part is not a prefix of this file
        fs::remove(part);
        why = "HTTP 416 for the resumed range; starting over";
        return Outcome::Retry;
      }
      why = fmt::format("HTTP {}", code);
      if (code == 404) why += " (not found)";
      if (code >= 500) {  // the server's trouble (503: overloaded), often brief: try again after a pause
        why += " (a server error)";
        return Outcome::Pause;
      }
      return Outcome::Fail;
    case CURLE_FILESIZE_EXCEEDED:
      why = fmt::format("the server announces a file larger than its cap of {} bytes", o.max_bytes);
      return Outcome::Fail;
    case CURLE_RANGE_ERROR:  // the server cannot resume: start over
      fs::remove(part);
      why = "the server does not resume downloads; starting over";
      return Outcome::Retry;
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
      why = fmt::format("the connection broke after {} bytes ({})", a.start + a.written, detail);
      return a.written > 0 ? Outcome::Retry : Outcome::Fail;
    case CURLE_UNSUPPORTED_PROTOCOL:
      why = o.allow_plain_http ? detail
                               : "plain HTTP (or another protocol) is refused; only HTTPS is used unless an "
                                 "http:// --base-url is given";
      return Outcome::Fail;
    default:
      why = detail;
      return Outcome::Fail;
  }
}

}  // namespace

void download(const std::string& url, const fs::path& target, const DownloadOptions& options) {
  global_init_once();
  const fs::path part = partial_path(target);
  std::string why;
  for (int attempt = 1;; ++attempt) {
    const Outcome outcome = attempt_once(url, part, options, why);
    if (outcome == Outcome::Done) break;
    const bool again = outcome == Outcome::Retry || outcome == Outcome::Pause;
    if (!again || attempt >= options.attempts) {
      // Keep a usable prefix for the next run; drop anything refused outright.
      const bool resumable = outcome == Outcome::Retry || outcome == Outcome::Keep;
      if (!resumable) {
        std::error_code ec;
        fs::remove(part, ec);
      }
      fail("{}: {}{}", url, why, again ? fmt::format(" ({} attempts)", attempt) : "");
    }
    if (outcome == Outcome::Pause) std::this_thread::sleep_for(std::chrono::seconds(1 << (attempt - 1)));
  }
  std::error_code ec;
  fs::rename(part, target, ec);
  if (ec) fail("cannot rename {} to {}: {}", part.string(), target.string(), ec.message());
}

}  // namespace posgrad::fetch
