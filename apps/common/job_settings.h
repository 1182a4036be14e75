// JobSettings: the --config files and -D assignments given with a job that reads a finished run
// (charlm eval, charlm sample, ...), and how that job applies them. The run's config.yaml gives
// every setting; the job then takes from the command line only the settings that concern it
// (eval.batch, device, ...), presets first, then overrides, in order, and names on stderr each
// one it ignores (a model's width cannot change after training):
//
//   load_run_settings(settings, run_dir);                           // cli.h
//   apply_job_settings(settings, job, {"device", "eval."}, "charlm eval");
//
// Deliberately does not: decide which settings concern a job (the app lists them) or read the
// run folder (cli.h's load_run_settings does).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "apps/common/settings.h"

namespace posgrad::apps {

struct JobSettings {
  std::vector<std::filesystem::path> presets;  // the --config files, resolved, in order
  std::vector<std::string> overrides;          // the -D assignments, in order
};

// Applies job.presets, then job.overrides, over `settings`, then puts back the value of every
// changed setting whose key `takes` does not name (an entry is a key, "device", or a section
// ending in a dot, "eval."), and prints one line on stderr, "<job>: ignoring <keys>: ...",
// when there are any. A mistake in a preset or an override (an unknown key, a bad value) throws
// as it does for training. Returns the ignored keys, in declaration order.
std::vector<std::string> apply_job_settings(Settings& settings, const JobSettings& job,
                                            const std::vector<std::string>& takes, const std::string& name);

}  // namespace posgrad::apps
