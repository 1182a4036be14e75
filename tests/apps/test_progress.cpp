// Progress: plain log lines are rate-limited (never one per step), the terminal line refreshes
// in place with a rate and an ETA, and finish() prints one summary line.
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/common/progress.h"

using posgrad::apps::Progress;

namespace {

std::string read_back(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  return text;
}

int count(const std::string& text, char c) {
  int n = 0;
  for (char x : text) n += x == c;
  return n;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(progress)

BOOST_AUTO_TEST_CASE(plain_output_does_not_flood) {
  std::FILE* f = std::tmpfile();
  BOOST_REQUIRE(f != nullptr);
  Progress::Options o;
  o.mode = Progress::Mode::Plain;
  o.stream = f;
  {
    Progress p(100000, "train", o);
    BOOST_TEST(!p.is_terminal());
    for (int step = 1; step <= 100000; ++step) p.update(step, {{"loss", 1.0 / step}});
    p.finish();
    p.finish();  // idempotent
  }
  const std::string text = read_back(f);
  std::fclose(f);
  // A fast loop: only the final line (percent lines need a second between them).
  BOOST_TEST(count(text, '\n') <= 2);
  BOOST_TEST(text.find("train done: 100000 steps") != std::string::npos);
  BOOST_TEST(text.find("loss") != std::string::npos);
  BOOST_TEST(text.find('\r') == std::string::npos);
}

BOOST_AUTO_TEST_CASE(plain_output_logs_every_percent_step) {
  std::FILE* f = std::tmpfile();
  BOOST_REQUIRE(f != nullptr);
  Progress::Options o;
  o.mode = Progress::Mode::Plain;
  o.stream = f;
  o.min_log_gap_s = 0;
  o.log_every_percent = 10;
  {
    Progress p(1000, "eval", o);
    for (int step = 1; step <= 1000; ++step) p.update(step, {{"acc", 0.5}});
  }  // the destructor finishes
  const std::string text = read_back(f);
  std::fclose(f);
  BOOST_TEST(count(text, '\n') == 11);  // 10%, 20%, ... 100%, then "done"
  BOOST_TEST(text.find("eval  50%  500/1000") != std::string::npos);
  BOOST_TEST(text.find("ETA") != std::string::npos);
  BOOST_TEST(text.find("eval done") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(terminal_output_refreshes_one_line) {
  std::FILE* f = std::tmpfile();
  BOOST_REQUIRE(f != nullptr);
  Progress::Options o;
  o.mode = Progress::Mode::Terminal;
  o.stream = f;
  o.refresh_s = 0;
  {
    Progress p(10, "train", o);
    BOOST_TEST(p.is_terminal());
    for (int step = 1; step <= 10; ++step) p.update(step, {{"loss", 0.5}});
    p.print("a message");
    p.finish();
  }
  const std::string text = read_back(f);
  std::fclose(f);
  BOOST_TEST(text.find('\r') != std::string::npos);
  BOOST_TEST(text.find("[####################] 100%") != std::string::npos);
  BOOST_TEST(text.find("it/s") != std::string::npos);
  BOOST_TEST(text.find("a message\n") != std::string::npos);
  BOOST_TEST(count(text, '\n') == 2);  // the message and the final line
}

BOOST_AUTO_TEST_CASE(unknown_total) {
  std::FILE* f = std::tmpfile();
  BOOST_REQUIRE(f != nullptr);
  Progress::Options o;
  o.mode = Progress::Mode::Plain;
  o.stream = f;
  {
    Progress p(0, "stream", o);
    for (int step = 1; step <= 50; ++step) p.update(step);
  }
  const std::string text = read_back(f);
  std::fclose(f);
  BOOST_TEST(text.find("stream done: 50 steps") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(no_done_line_when_unwinding) {
  std::FILE* f = std::tmpfile();
  BOOST_REQUIRE(f != nullptr);
  Progress::Options o;
  o.mode = Progress::Mode::Plain;
  o.stream = f;
  try {
    Progress p(10, "train", o);
    p.update(1);
    throw std::runtime_error("training failed");
  } catch (const std::runtime_error&) {
  }
  const std::string text = read_back(f);
  std::fclose(f);
  BOOST_TEST(text.find("done") == std::string::npos);
}

// The ETA after a pause (validation, a checkpoint, a slow step): 60 steps of 0.5 s, a 300 s pause,
// 3 more steps of 0.5 s. The rate stays 2 it/s and the ETA is (1000 - 64) x 0.5 s = 7:48; a rate
// over the last seconds would read about 100 s/it and an ETA of a day.
BOOST_AUTO_TEST_CASE(rate_and_eta_ignore_a_pause) {
  std::FILE* f = std::tmpfile();
  BOOST_REQUIRE(f != nullptr);
  double clock_s = 0;
  Progress::Options o;
  o.mode = Progress::Mode::Plain;
  o.stream = f;
  o.log_every_s = 0;  // a line at every update
  o.min_log_gap_s = 0;
  o.clock = [&clock_s] { return clock_s; };
  {
    Progress p(1000, "train", o);
    int64_t step = 0;
    for (int i = 0; i < 60; ++i) {
      clock_s += 0.5;
      p.update(++step);
    }
    clock_s += 300.0;  // validation
    p.update(++step);
    for (int i = 0; i < 3; ++i) {
      clock_s += 0.5;
      p.update(++step);
    }
  }
  const std::string text = read_back(f);
  std::fclose(f);
  const size_t at = text.find("64/1000");
  BOOST_REQUIRE(at != std::string::npos);
  const std::string line = text.substr(at, text.find('\n', at) - at);
  BOOST_TEST(line.find("2.0 it/s") != std::string::npos, line);
  BOOST_TEST(line.find("ETA 7:48") != std::string::npos, line);
}

// A run resumed at step 5 that runs to step 6 ran 2 steps here, not 6.
BOOST_AUTO_TEST_CASE(done_line_counts_the_steps_run_here) {
  std::FILE* f = std::tmpfile();
  BOOST_REQUIRE(f != nullptr);
  Progress::Options o;
  o.mode = Progress::Mode::Plain;
  o.stream = f;
  {
    Progress p(6, "train", o);
    p.update(5);
    p.update(6);
  }
  const std::string text = read_back(f);
  std::fclose(f);
  BOOST_TEST(text.find("train done: 2 steps (steps 5-6)") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(durations) {
  BOOST_TEST(posgrad::apps::format_duration(7) == "0:07");
  BOOST_TEST(posgrad::apps::format_duration(754) == "12:34");
  BOOST_TEST(posgrad::apps::format_duration(3723) == "1:02:03");
  BOOST_TEST(posgrad::apps::format_duration(-1) == "?");
}

// A run resumed at step 4 that logs every second step ran steps 5-8 here, although its first
// update is at step 6 (it printed '3 steps (steps 6-8)'); a fresh one ran all 8.
BOOST_AUTO_TEST_CASE(done_line_counts_from_where_the_loop_started) {
  for (const int64_t start : {4, 0}) {
    std::FILE* f = std::tmpfile();
    BOOST_REQUIRE(f != nullptr);
    Progress::Options o;
    o.mode = Progress::Mode::Plain;
    o.stream = f;
    {
      Progress p(8, "train", o);
      p.start_at(start);
      for (int64_t step = start + 2; step <= 8; step += 2) p.update(step);
    }
    const std::string text = read_back(f);
    std::fclose(f);
    const std::string expected = start == 4 ? "train done: 4 steps (steps 5-8)" : "train done: 8 steps in";
    BOOST_TEST(text.find(expected) != std::string::npos, text);
  }
}

BOOST_AUTO_TEST_SUITE_END()
