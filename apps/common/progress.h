// Progress: shows how far a long loop is. On a terminal, one line refreshed in place:
//   train [########............]  40%  4000/10000  812 it/s  ETA 0:07  loss 0.31  acc 0.9
// Otherwise (a log file, a pipe, CI) plain lines, at most one per `log_every_s` seconds or per
// `log_every_percent` of the work, whichever comes first, so logs never flood.
// The rate and the ETA come from the median time per step over the recent updates, so a pause
// between two steps (validation, a checkpoint, a step slowed by another process) does not make
// the rate or the ETA jump; the final line's mean rate counts the whole time.
//
//   Progress p(total_steps, "train");
//   for (...) p.update(step, {{"loss", 0.31}, {"acc", 0.9}});
//   p.finish();
//
// Deliberately does not: write metrics files (see run_dir.h), handle several bars at once, or
// draw anything but ASCII.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace posgrad::apps {

class Progress {
 public:
  using Metrics = std::vector<std::pair<std::string, double>>;
  enum class Mode { Auto, Terminal, Plain };

  struct Options {
    Mode mode = Mode::Auto;          // Auto: Terminal when `stream` is a tty
    std::FILE* stream = stdout;
    double refresh_s = 0.1;          // terminal: redraw at most this often
    double log_every_s = 30.0;       // plain: a line at least this often while running ...
    double log_every_percent = 10.0; // ... and one per this much of the work (0: never)
    double min_log_gap_s = 1.0;      // plain: never two lines closer than this (except finish)
    std::function<double()> clock;   // seconds from any origin (tests); empty: a steady clock
  };

  // `total` steps (0 or less: unknown, no percent nor ETA); `label` starts every line.
  Progress(int64_t total, std::string label);
  Progress(int64_t total, std::string label, Options options);
  ~Progress();  // finishes if finish() was not called (unless unwinding from an exception)
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // The steps done before this process's loop (a resumed run: the restored step; 0: a fresh run).
  // Call it before the first update when updates come every few steps: otherwise the first
  // update is taken as this process's first step.
  void start_at(int64_t steps_done);
  // `step` is the number of steps done (1..total). `metrics` are shown as "name value".
  void update(int64_t step, const Metrics& metrics = {});
  // Prints a message on its own line without breaking the progress line.
  void print(const std::string& message);
  // Prints the final line (the steps run in this process, and the last step when it started
  // from a later one, e.g. a resumed run; time, mean rate, last metrics). Idempotent.
  void finish();

  bool is_terminal() const { return terminal_; }
  double elapsed_s() const;

 private:
  double now() const;
  std::string render(bool final_line, int width) const;
  void draw_terminal(bool final_line);
  void write_plain(bool final_line);
  double rate() const;

  int64_t total_;
  std::string label_;
  Options opt_;
  bool terminal_ = false;
  bool finished_ = false;
  bool line_open_ = false;  // terminal: a progress line is on screen
  double start_ = 0;      // now() at construction
  double last_draw_ = 0;  // now() at the last line drawn or written
  double last_update_ = 0;
  int64_t first_step_ = -1;
  int64_t step_ = 0;
  int64_t last_percent_bucket_ = 0;
  int uncaught_at_start_ = std::uncaught_exceptions();
  Metrics metrics_;
  std::deque<double> step_seconds_;  // seconds per step over the recent updates (for the rate)
};

// "0:07", "12:34", "1:02:03".
std::string format_duration(double seconds);

}  // namespace posgrad::apps
