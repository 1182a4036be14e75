// The settings of the treetasks app: the APE paper's tree transduction tasks (COPY, ROTATE, C3,
// TREE-OPS in breadth- or depth-first output order; spec ape.md 7.3) with the shared model and
// recipe settings (apps/transduction_common/transduction_settings.h), defaulting to the paper's full
// configuration (configs/treetasks/full.yaml repeats it; configs/treetasks/quick.yaml is the
// 2-core size; configs/treetasks/schemes/ picks a scheme).
// Positions: "ape_tree" and "tree_sq" read the nodes' heap positions; every other scheme reads
// the flattened sequence's indices (the paper's flattened baselines, Table 2(b)).
// Deliberately does not: load data, build models or train (apps/transduction_common/transduction_run.h).
#pragma once

#include <cstdint>
#include <string>

#include "apps/transduction_common/transduction_settings.h"
#include "datasets/transduction/tree_tasks.h"

namespace posgrad::treetasks_app {

// seed (default 2130, the paper: 2130, 42, 1312), device, data.train/dev/test/seed, model.*,
// train.*: transduction_settings.h.
struct TreetasksSettings : transduction_app::TransductionSettings {
  TreetasksSettings() { seed = 2130; }
  std::string task = "rotate";  // copy | rotate | c3 | tree-ops
  std::string order = "depth";  // the output order: breadth | depth
  struct {
    int64_t vocab_size = 0;  // 0: the task's (20; 128 for tree-ops)
    double depth_mean = 7.0, depth_stddev = 1.0;
  } data;
};

void declare(apps::Settings& s, TreetasksSettings& c);
TreeTaskSettings task_settings(const TreetasksSettings& c);  // vocab_size resolved
bool tree_positions(const TreetasksSettings& c);             // the scheme reads heap positions
EncoderDecoderConfig model_config(const TreetasksSettings& c);
TransductionSplits make_splits(const TreetasksSettings& c);

}  // namespace posgrad::treetasks_app
