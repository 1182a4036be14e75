// The command line of a benchmark, on the app kit's options (apps/common/options.h): each benchmark
// declares its options on an apps::CommandLine made with kLaterOptionsWin (an option given again
// takes its last value, as the docs test relies on when it appends quick settings to a documented
// command) and returns the exit code parse() gives: --help exits 0, a bad option or value exits 2
// with one "<benchmark>: error: ..." line. The options themselves are each benchmark's business
// (see its Usage line).
//
// Deliberately does not: read settings files or environment variables (OMP_NUM_THREADS and
// POSGRAD_PYTHON are read where they are used).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "apps/common/options.h"

namespace posgrad::bench {

using apps::CommandLine;
using apps::NumberRange;
using apps::Options;
using apps::sizes_of;

// One integer option --<key> per entry of `values` (the benchmarks keep their sizes in such a
// map, which also feeds their twin's command line), each >= 1 when its key is in `counts`, else
// >= 0, with its default shown by --help.
inline void add_integer_options(Options& options, std::map<std::string, int64_t>& values,
                                const std::set<std::string>& counts = {"reps"}) {
  for (auto& [key, value] : values)
    options.integer("--" + key, value, "", NumberRange::at_least(counts.count(key) ? 1 : 0));
}

}  // namespace posgrad::bench
