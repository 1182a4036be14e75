// The results of a sweep (sweep.h), read from its run folders and written beside them:
//   results.md    per arm: n, the per-seed values, max, mean, sample sd of the metric and the
//                 mean with its 95% confidence interval (t-based, sweep_stats.h), with the
//                 reference (published) numbers beside ours; per comparison: the effect
//                 (mean b - mean a), Welch's t, df and two-sided p, with the reference's
//   results.csv   the same per arm, one row each (machine-readable; the interval as
//                 ci95_low, ci95_high)
//   runs.csv      one row per run: arm, seed, status, metric value, run folder
//   figures/curves.png (+ .svg)   the learning curve (curve.y over curve.x from metrics.jsonl)
//                 of every run, one colour per arm, the arm's mean over seeds thick
//   with `over`:  results.md and over.csv add, per over.y number, its mean, sd and n per arm
//                 family and over.setting value; figures/over.png (+ .svg) one panel per number
//                 against the setting, a line per family (the means) and a dot per seed
//
// Deliberately does not: run anything (sweep.h), or choose which comparisons matter.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "apps/common/sweep.h"

namespace posgrad::apps {

struct RunResult {
  SweepRun run;
  std::string status;  // finished | interrupted | not started | failed: <why>
  std::optional<double> value;
  std::vector<double> curve_x, curve_y;
  std::map<std::string, double> numbers;  // the over.y numbers of a finished run
};

std::vector<RunResult> collect_results(const SweepSpec& spec, const std::vector<SweepRun>& runs,
                                       const std::map<std::string, std::string>& failures = {});
// Writes results.md, results.csv, runs.csv and the curves figure into spec.out; `note` (e.g. the
// extra overrides of this invocation) goes under the title of results.md.
void write_sweep_report(const SweepSpec& spec, const std::vector<RunResult>& results, const std::string& note);

}  // namespace posgrad::apps
