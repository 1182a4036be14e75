// Progress line of a transfer (see transfer_progress.h). The rate is the bytes of this run over
// its time so far; the ETA is what is left at that rate.
#include "datasets/fetch/transfer_progress.h"

#include <fmt/format.h>
#include <unistd.h>

namespace posgrad::fetch {

std::string format_bytes(int64_t bytes) {
  if (bytes < 1000) return fmt::format("{} B", bytes);
  if (bytes < 1000 * 1000) return fmt::format("{:.1f} kB", bytes / 1e3);
  if (bytes < 1000LL * 1000 * 1000) return fmt::format("{:.1f} MB", bytes / 1e6);
  return fmt::format("{:.2f} GB", bytes / 1e9);
}

TransferProgress::TransferProgress(std::string label, std::FILE* out, Clock clock)
    : label_(std::move(label)), out_(out),
      clock_(clock ? std::move(clock) : Clock([] { return std::chrono::steady_clock::now(); })),
      terminal_(::isatty(fileno(out)) == 1), start_(clock_()), last_print_(start_) {}

std::string TransferProgress::line(int64_t bytes, int64_t total) const {
  const double seconds = std::chrono::duration<double>(clock_() - start_).count();
  const double rate = seconds > 0 ? static_cast<double>(bytes - std::max<int64_t>(first_bytes_, 0)) / seconds : 0;
  std::string s = fmt::format("{}  {}", label_, format_bytes(bytes));
  if (total > 0) s += fmt::format(" / {} ({:.0f}%)", format_bytes(total), 100.0 * bytes / total);
  s += fmt::format("  {}/s", format_bytes(static_cast<int64_t>(rate)));
  if (total > 0 && rate > 0 && bytes < total) {
    const auto left = static_cast<int64_t>(static_cast<double>(total - bytes) / rate);
    s += fmt::format("  ETA {}:{:02d}:{:02d}", left / 3600, (left / 60) % 60, left % 60);
  }
  return s;
}

void TransferProgress::update(int64_t bytes, int64_t total) {
  if (first_bytes_ < 0) first_bytes_ = bytes;
  bytes_ = bytes;
  total_ = total;
  const auto now = clock_();
  const auto every = terminal_ ? std::chrono::milliseconds(250) : std::chrono::milliseconds(10000);
  if (now - last_print_ < every) return;
  last_print_ = now;
  printed_ = true;
  printed_bytes_ = bytes;
  if (terminal_)
    fmt::print(out_, "\r{}\033[K", line(bytes, total));
  else
    fmt::print(out_, "{}\n", line(bytes, total));
  std::fflush(out_);
}

void TransferProgress::finish() {
  if (bytes_ == 0 && !printed_) return;  // nothing arrived: the error says why
  if (!terminal_ && printed_ && printed_bytes_ == bytes_) return;  // the log has this line already
  if (terminal_ && printed_)
    fmt::print(out_, "\r{}\033[K\n", line(bytes_, total_));
  else
    fmt::print(out_, "{}\n", line(bytes_, total_));
  std::fflush(out_);
}

}  // namespace posgrad::fetch
