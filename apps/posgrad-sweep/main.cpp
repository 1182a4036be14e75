// posgrad-sweep: runs every arm x seed of a sweep file (apps/common/sweep.h), one run at a time,
// skipping finished runs and resuming interrupted ones, then writes results.md, results.csv,
// runs.csv and figures/curves.png into the sweep's folder (apps/common/sweep_report.h).
//
//   posgrad-sweep SWEEP.yaml [--out DIR] [-Dkey=value]... [--ranks N] [--dry-run] [--table-only]
//
// -D overrides go to every fresh run (after the arms' own; e.g. -Dtrain.max_steps=3 for a smoke
// test; results.md records them). --ranks N runs every run data-parallel as `mpirun -np N app
// ...` (1: the app alone), in place of the file's `ranks` or `launcher`. --dry-run prints the command of every run and what it would
// do; --table-only writes the tables from the runs already there. The exit status is 1 when a
// run failed (the others still run), else 0. Ctrl-C, SIGTERM or SIGHUP stops the run in progress
// and the sweep (apps/common/sweep_process.h); the same command continues it. A sweep (but not
// --dry-run) holds the lock of its sweep folder (apps/common/folder_lock.h): a second sweep into
// the same folder refuses.
//
// Deliberately does not: run runs in parallel, or pass anything but -D overrides to the app.
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "apps/common/cli.h"
#include "apps/common/folder_lock.h"
#include "apps/common/sweep.h"
#include "apps/common/sweep_process.h"
#include "apps/common/sweep_report.h"
#include "tensor/error.h"

using namespace posgrad;
using namespace posgrad::apps;

int main(int argc, char** argv) {
  CommandLine cli("posgrad-sweep",
                  "posgrad-sweep: trains every arm x seed of a sweep file, one run at a time, and writes its results table");
  std::string file, out;
  std::vector<std::string> overrides;
  bool dry_run = false, table_only = false;
  int64_t ranks = 0;
  cli.options()
      .required_path("sweep", file, "the sweep file (YAML; see apps/common/sweep.h)")
      .path("--out", out, "the sweep folder (default: the file's 'out', else runs/sweeps/<file stem>)")
      .texts("-D", overrides, "key=value override for every fresh run (repeatable)")
      .integer("--ranks", ranks, "run every run as N data-parallel ranks under mpirun (replaces the file's ranks or launcher)",
               NumberRange::at_least(1))
      .flag("--dry-run", dry_run, "print what each run would do, run nothing")
      .flag("--table-only", table_only, "write the tables from the runs already there, run nothing");
  if (const auto exit_code = cli.parse(argc, argv)) return *exit_code;
  try {
    SweepSpec spec = load_sweep(file);
    if (ranks > 0) spec.launcher = mpirun_launcher(ranks, "--ranks");
    if (!out.empty()) {
      if (spec.runs == spec.out) spec.runs = out;
      spec.out = out;
    }
    const auto runs = plan_sweep(spec);
    // One sweep writes a sweep folder at a time (each run's folder is locked by its own app).
    FolderLock lock;
    if (!dry_run) {
      create_sweep_folders(spec);
      lock = FolderLock(spec.out, "sweep folder");
    }
    std::map<std::string, std::string> failures;
    if (!table_only) {
      if (!dry_run) catch_stop_signals();
      const std::filesystem::path exe = find_app(spec, std::filesystem::canonical("/proc/self/exe"));
      size_t index = 0;
      for (const SweepRun& run : runs) {
        ++index;
        const std::string label = fmt::format("[{}/{}] {} seed {}", index, runs.size(), spec.arms[run.arm].name, run.seed);
        if (run.finished()) {
          fmt::print("{}: finished, skipped\n", label);
          continue;
        }
        const bool resume = run.started() && std::filesystem::exists(run.dir / "checkpoints" / "latest");
        auto command = run_command(spec, run, exe, overrides, resume);
        std::vector<const char*> raw;
        for (const auto& a : command) raw.push_back(a.c_str());
        fmt::print("{}: {} ({})\n  {}\n", label, resume ? "resuming" : "starting", run.log().string(),
                   quoted_command(static_cast<int>(raw.size()), raw.data()));
        std::fflush(stdout);
        if (dry_run) continue;
        int rc = run_child_logged(command, run.log());
        if (rc != 0 && resume && !stop_signal()) {  // a checkpoint that does not load: start the run again
          fmt::print("{}: resume failed (exit {}), starting it again\n", label, rc);
          command = run_command(spec, run, exe, overrides, false);
          rc = run_child_logged(command, run.log());
        }
        if (stop_signal()) {
          fmt::print(stderr,
                     "posgrad-sweep: stopped by {} at {}; the finished runs are kept, and the same command "
                     "continues the sweep (an interrupted run resumes from its last checkpoint)\n",
                     signal_name(stop_signal()), label);
          die_of_stop_signal();
        }
        if (rc != 0) {
          failures[run.dir.string()] = fmt::format("exit {}, see {}", rc, run.log().string());
          fmt::print("{}: FAILED (exit {}), see {}\n", label, rc, run.log().string());
        }
        std::fflush(stdout);
      }
    }
    if (dry_run) return 0;
    const auto results = collect_results(spec, runs, failures);
    std::string note =
        overrides.empty() ? "" : fmt::format("Every run also had -D{} (given to posgrad-sweep).", fmt::join(overrides, " -D"));
    if (!spec.launcher.empty())
      note += fmt::format("{}Every run was launched as `{} {}` (data parallel).", note.empty() ? "" : " ",
                          fmt::join(spec.launcher, " "), spec.app);
    write_sweep_report(spec, results, note);
    fmt::print("results: {}\n", (spec.out / "results.md").string());
    if (stop_signal()) die_of_stop_signal();
    return failures.empty() ? 0 : 1;
  } catch (const Error& e) {
    fmt::print(stderr, "posgrad-sweep: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {  // e.g. a std::filesystem error in writing the tables
    fmt::print(stderr, "posgrad-sweep: error: {}\n", e.what());
    return 1;
  }
}
