// The runs of a sweep as child processes, and what a stop signal does to them.
//
// After catch_stop_signals(), SIGINT (Ctrl-C), SIGTERM and SIGHUP no longer end the sweep at once:
// the handler records the first one and passes each on to the run in progress, the sweep waits
// for that run to end (so no training is left behind as an orphan), starts no other run, and
// ends itself with die_of_stop_signal(), as the signal would have ended it. The interrupted run
// keeps its folder (config.yaml and its checkpoints), so the same sweep command continues it.
// SIGINT and SIGTERM are caught even when the sweep started with them ignored (as a shell script
// starts a job with `&`), so `kill -INT` always stops it; SIGHUP ignored (nohup) stays ignored,
// for the sweep and its runs.
//
// Deliberately does not: kill a run that outlives the signal (a second signal is passed on
// again), run several children at once, or give the child a process group of its own (Ctrl-C
// at a terminal reaches it directly too).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace posgrad::apps {

// Installs the handlers (once; later calls do nothing).
void catch_stop_signals();
// The first stop signal received since catch_stop_signals() (0: none).
int stop_signal();
// "SIGINT", "SIGTERM", "SIGHUP" or "signal N".
std::string signal_name(int signal);

// Runs argv (argv[0] the executable's path, or a name looked up on PATH; no shell) with its stdout and stderr appended to
// `log` (created, with its folder), and waits for it. A stop signal received meanwhile is passed
// on to it; one received before it started means it is not started. Returns its exit status,
// or 128 + the signal that ended it. An error naming the log or the program when either cannot
// be opened or started.
int run_child_logged(const std::vector<std::string>& argv, const std::filesystem::path& log);

// Ends this process with the stop signal's own default action (exit status 128 + signal seen
// by the shell). Only after stop_signal() != 0.
[[noreturn]] void die_of_stop_signal();

}  // namespace posgrad::apps
