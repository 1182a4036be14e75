// Progress: see progress.h.
#include "apps/common/progress.h"

#include <algorithm>
#include <cmath>
#include <exception>

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

namespace posgrad::apps {

namespace {

int terminal_width(std::FILE* stream) {
  winsize ws{};
  if (::ioctl(::fileno(stream), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10) return ws.ws_col;
  return 100;
}

std::string format_rate(double r) {
  if (!(r > 0) || !std::isfinite(r)) return "- it/s";
  if (r >= 1.0) return fmt::format("{:.{}f} it/s", r, r >= 100 ? 0 : 1);
  return fmt::format("{:.1f} s/it", 1.0 / r);
}

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<int64_t>(std::llround(seconds));
  const int64_t h = s / 3600, m = (s / 60) % 60, sec = s % 60;
  if (h > 0) return fmt::format("{}:{:02}:{:02}", h, m, sec);
  return fmt::format("{}:{:02}", m, sec);
}

Progress::Progress(int64_t total, std::string label) : Progress(total, std::move(label), Options{}) {}

Progress::Progress(int64_t total, std::string label, Options options)
    : total_(total), label_(std::move(label)), opt_(std::move(options)) {
  if (opt_.stream == nullptr) opt_.stream = stdout;
  if (!opt_.clock) {
    opt_.clock = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
  }
  terminal_ = opt_.mode == Mode::Terminal ||
              (opt_.mode == Mode::Auto && ::isatty(::fileno(opt_.stream)) == 1);
  start_ = last_draw_ = last_update_ = now();
}

Progress::~Progress() {
  if (finished_) return;
  if (std::uncaught_exceptions() > uncaught_at_start_) {
    // Unwinding from an error: end the progress line, but do not claim the work is done.
    if (terminal_ && line_open_) {
      std::fputc('\n', opt_.stream);
      std::fflush(opt_.stream);
    }
    return;
  }
  finish();
}

double Progress::now() const { return opt_.clock(); }

double Progress::elapsed_s() const { return now() - start_; }

// Steps per second: the inverse of the median time per step over the last kRateWindow updates.
// A median, not a mean over a time window, so that one long gap between two steps (validation, a
// checkpoint, another process taking the core) does not set the rate.
double Progress::rate() const {
  if (step_seconds_.empty()) return 0.0;
  std::vector<double> sorted(step_seconds_.begin(), step_seconds_.end());
  auto mid = sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2);
  std::nth_element(sorted.begin(), mid, sorted.end());
  return *mid > 0 ? 1.0 / *mid : 0.0;
}

void Progress::start_at(int64_t steps_done) {
  first_step_ = steps_done + 1;
  step_ = steps_done;
  last_update_ = now();
}

void Progress::update(int64_t step, const Metrics& metrics) {
  if (finished_) return;
  constexpr size_t kRateWindow = 63;
  const double t = now();
  if (first_step_ < 0) {
    // Rates count from here, so a resumed run does not claim the earlier steps.
    first_step_ = step;
    step_ = std::max<int64_t>(0, step - 1);
  }
  if (step > step_) {
    step_seconds_.push_back((t - last_update_) / static_cast<double>(step - step_));
    if (step_seconds_.size() > kRateWindow) step_seconds_.pop_front();
  }
  step_ = step;
  last_update_ = t;
  if (!metrics.empty()) metrics_ = metrics;

  const double since_draw = t - last_draw_;
  if (terminal_) {
    if (since_draw >= opt_.refresh_s || (total_ > 0 && step >= total_)) draw_terminal(false);
    return;
  }
  bool due = since_draw >= opt_.log_every_s;
  if (total_ > 0 && opt_.log_every_percent > 0) {
    const auto bucket = static_cast<int64_t>(100.0 * static_cast<double>(step) /
                                             static_cast<double>(total_) / opt_.log_every_percent);
    if (bucket > last_percent_bucket_) {
      last_percent_bucket_ = bucket;
      due = due || since_draw >= opt_.min_log_gap_s;
    }
  }
  if (due && since_draw >= opt_.min_log_gap_s) write_plain(false);
}

std::string Progress::render(bool final_line, int width) const {
  const double t = elapsed_s();
  std::string metrics;
  for (const auto& [name, value] : metrics_) metrics += fmt::format("  {} {:.4g}", name, value);

  if (final_line) {
    const int64_t started_after = std::max<int64_t>(0, first_step_ - 1);
    const int64_t done = first_step_ < 0 ? 0 : step_ - started_after;
    const std::string resumed = started_after > 0 ? fmt::format(" (steps {}-{})", first_step_, step_) : "";
    return fmt::format("{} done: {} steps{} in {} ({}){}", label_, done, resumed, format_duration(t),
                       format_rate(t > 0 ? static_cast<double>(done) / t : 0.0), metrics);
  }
  const double r = rate();
  std::string head;
  if (total_ > 0) {
    const double frac = std::clamp(static_cast<double>(step_) / static_cast<double>(total_), 0.0, 1.0);
    const std::string eta = r > 0 ? format_duration(static_cast<double>(total_ - step_) / r) : "?";
    std::string bar;
    if (terminal_) {
      const int cells = 20;
      const int full = static_cast<int>(frac * cells);
      bar = "[" + std::string(full, '#') + std::string(cells - full, '.') + "] ";
    }
    head = fmt::format("{} {}{:3.0f}%  {}/{}  {}  ETA {}", label_, bar, 100.0 * frac, step_, total_,
                       format_rate(r), eta);
  } else {
    head = fmt::format("{}  {}  {}  {}", label_, step_, format_rate(r), format_duration(t));
  }
  std::string line = head + metrics;
  if (width > 0 && static_cast<int>(line.size()) > width) line.resize(static_cast<size_t>(width));
  return line;
}

void Progress::draw_terminal(bool final_line) {
  const int width = terminal_width(opt_.stream) - 1;  // never wrap: \r must reach the start
  const std::string line = render(final_line, final_line ? 0 : width);
  std::fprintf(opt_.stream, "\r\033[K%s%s", line.c_str(), final_line ? "\n" : "");
  std::fflush(opt_.stream);
  line_open_ = !final_line;
  last_draw_ = now();
}

void Progress::write_plain(bool final_line) {
  std::fprintf(opt_.stream, "%s\n", render(final_line, 0).c_str());
  std::fflush(opt_.stream);
  last_draw_ = now();
}

void Progress::print(const std::string& message) {
  if (terminal_ && line_open_) {
    std::fprintf(opt_.stream, "\r\033[K%s\n", message.c_str());
    draw_terminal(false);
  } else {
    std::fprintf(opt_.stream, "%s\n", message.c_str());
    std::fflush(opt_.stream);
  }
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (terminal_) draw_terminal(true);
  else write_plain(true);
}

}  // namespace posgrad::apps
