// Sweeps: one app trained over a set of arms (presets and overrides) and seeds, one run at a
// time, for a results table (sweep_report.h). A sweep file (YAML):
//
//   app: posattn                          # an executable beside posgrad-sweep, or a path
//   base: [configs/posattn/quick/2d_siren.yaml]   # presets every run starts from (optional)
//   set: {train.epochs: 6}                # -D overrides for every run (optional)
//   out: runs/sweeps/posattn_quick        # default: runs/sweeps/<file stem>
//   runs: runs/sweeps/posattn_thesis/runs # where the run folders live (default: out); sweeps
//                                         # sharing it share runs of the same arm name and seed
//   metric: val_acc_max                   # a number in each run's summary.json
//   curve: {x: epoch, y: val_acc}         # metrics.jsonl keys for the learning curves (optional;
//                                         # log_y: true draws y on a log scale)
//   seed_key: seed                        # the setting the seeds go to (default "seed")
//   seeds: [9188, 2755]                   # each once (a repeated seed or grid value is an error)
//   arms:                                 # each: a name, its presets and overrides, and
//     - name: 2d_siren                    #   optionally the published numbers beside ours
//       config: [configs/posattn/quick/2d_siren.yaml]
//       set: {model.span: false}
//       reference: {max: 0.8134, mean: 0.7991, sd: 0.008688}
//   grid: {model.span: [false, true]}     # optional: every arm x every combination of values
//   comparisons:                          # Welch t-tests, effect = mean(b) - mean(a)
//     - {name: "2-D vs 1-D", a: 1d_siren, b: 2d_siren, reference_effect: 0.0722, reference_p: 0.001}
//   over: {setting: model.max_span, y: [val_bpc, span_avg], log_x: true}
//                                         # optional: summary.json numbers against one grid
//                                         # setting (numbers), one table and figure panel per y,
//                                         # one line per arm (e.g. fixed vs adaptive span over S)
//   reference_source: "thesis Tables 5-7" # what the reference numbers are
//   ranks: 2                              # optional: every run data-parallel, as `mpirun -np 2 app ...`
//   launcher: [srun, -n, 4]               # optional, instead of ranks: the command put before the app
//
// Runs live in <runs>/<arm>/seed-<seed>/ (the app's run folder; its output goes to
// <runs>/<arm>/seed-<seed>.log). A run with summary.json is finished and skipped; a run with a
// config.yaml but no summary.json was interrupted and is continued with `app train --resume`;
// any other is started (`app train --config ... -D... --out ... --overwrite`). With `ranks` or
// `launcher` that command (fresh or resumed) runs under the launcher: every app trains
// data-parallel under mpirun or srun (docs/distributed.md); a launcher that is not a path is
// looked up on PATH.
//
// Deliberately does not: run several runs at once, retry failed runs, or schedule on clusters.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "apps/common/sweep_stats.h"

namespace posgrad::apps {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

struct SweepArm {
  std::string name;
  std::vector<std::filesystem::path> configs;  // resolved presets, after the base ones
  KeyValues set;                               // after the sweep's `set`
  std::optional<ArmStats> reference;
  // The arm's name without the over setting's value (its line in the over figure), and with
  // `over` that value (its x).
  std::string family;
  double over_x = 0;
};

struct SweepComparison {
  std::string name, a, b;
  std::optional<double> reference_effect, reference_p;
};

struct SweepSpec {
  std::filesystem::path file;
  std::string title;  // the file stem unless `title:` is given
  std::string app;
  std::vector<std::filesystem::path> base;
  KeyValues set;
  std::filesystem::path out;
  std::filesystem::path runs;  // = out unless `runs:` is given
  std::string metric = "val_acc_max";
  bool higher_is_better = true;
  std::string curve_x, curve_y;
  bool curve_log_y = false;  // the curves' y axis on a log scale (a perplexity from 10^5 to 4)
  std::string over_setting;         // `over`: a grid setting with numeric values ("" without)
  std::vector<std::string> over_y;  // summary.json numbers drawn and tabled against it
  bool over_log_x = false;
  std::string seed_key = "seed";
  std::vector<int64_t> seeds;
  std::vector<SweepArm> arms;  // grid already expanded
  std::vector<SweepComparison> comparisons;
  std::string reference_source;
  std::vector<std::string> launcher;  // put before the app's command (empty: the app alone)
};

// Reads and checks a sweep file (errors name the file and the key).
SweepSpec load_sweep(const std::filesystem::path& file);

struct SweepRun {
  size_t arm = 0;
  int64_t seed = 0;
  std::filesystem::path dir;  // <runs>/<arm>/seed-<seed>
  std::filesystem::path log() const { return dir.parent_path() / (dir.filename().string() + ".log"); }
  bool finished() const { return std::filesystem::exists(dir / "summary.json"); }
  bool started() const { return std::filesystem::exists(dir / "config.yaml"); }
};
std::vector<SweepRun> plan_sweep(const SweepSpec& spec);
// Creates spec.out and spec.runs; an error naming the folder when one cannot be (a path under a
// regular file, a read-only file system), before any run starts.
void create_sweep_folders(const SweepSpec& spec);

// The app's command line for a run: a fresh start, or --resume for an interrupted one.
// `extra` are -D overrides added to every fresh run (after the arm's).
std::vector<std::string> run_command(const SweepSpec& spec, const SweepRun& run, const std::filesystem::path& app,
                                     const std::vector<std::string>& extra, bool resume);
// The launcher of `ranks` data-parallel ranks: mpirun -np <ranks> (nothing for 1 rank).
std::vector<std::string> mpirun_launcher(int64_t ranks, const std::string& where);
// The executable: spec.app when it holds a '/', else the file of that name beside `self`.
std::filesystem::path find_app(const SweepSpec& spec, const std::filesystem::path& self);

}  // namespace posgrad::apps
