// A download's progress on one line: bytes so far and the total, the rate and the time left,
// redrawn in place on a terminal (at most a few times a second) and printed every ten seconds
// otherwise (a log file gets a line now and then, not thousands).
// This file deliberately knows nothing of HTTP; download.h feeds it numbers.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace posgrad::fetch {

std::string format_bytes(int64_t bytes);  // "812 B", "4.2 MB", "1.1 GB" (decimal units)

class TransferProgress {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  // `clock` defaults to std::chrono::steady_clock::now (tests pass their own).
  TransferProgress(std::string label, std::FILE* out, Clock clock = {});
  void update(int64_t bytes, int64_t total);  // total < 0: unknown
  void finish();  // the final line (and a newline on a terminal); none when no byte arrived

 private:
  std::string line(int64_t bytes, int64_t total) const;
  std::string label_;
  std::FILE* out_;
  Clock clock_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_, last_print_;
  int64_t first_bytes_ = -1;  // bytes at the first update (a resumed prefix is not counted in the rate)
  int64_t bytes_ = 0, total_ = -1;
  int64_t printed_bytes_ = -1;  // bytes of the last line printed
  bool printed_ = false;
};

}  // namespace posgrad::fetch
