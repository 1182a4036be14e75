// One file over HTTP(S) with libcurl into `<target>.part`, resumed with an HTTP Range request when
// a `.part` is already there, renamed to `target` only when the transfer is complete. HTTPS with
// certificate verification unless plain HTTP is explicitly allowed; a size cap; an HTML page where
// a file was expected is refused; a stalled or dropped connection is retried from where it stopped,
// a server error (HTTP 5xx) after a pause of 1, 2, 4 s.
// Errors are one line naming the URL or the file and what to do.
// This file deliberately checks no checksum (the caller does) and knows no datasets.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace posgrad::fetch {

// Bytes so far (including a resumed prefix) and the total when the server announced it (else -1).
using ProgressFn = std::function<void(int64_t bytes, int64_t total)>;

struct DownloadOptions {
  bool allow_plain_http = false;  // only through an explicit --base-url
  int64_t max_bytes = 0;          // > 0: a larger file is refused
  int connect_timeout_s = 15;
  int stall_timeout_s = 60;       // no byte for this long: the attempt is given up (and retried)
  int attempts = 4;               // tries of one URL (while each makes progress, or after a 5xx)
  ProgressFn progress;            // may be empty
};

// Downloads url into target (via target + ".part"). Throws posgrad::Error on failure, leaving the
// .part in place when it holds a usable prefix for a later resume.
void download(const std::string& url, const std::filesystem::path& target, const DownloadOptions& options);

// target + ".part"
std::filesystem::path partial_path(const std::filesystem::path& target);

}  // namespace posgrad::fetch
