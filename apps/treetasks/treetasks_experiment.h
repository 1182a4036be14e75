// The treetasks app's experiment: its settings turned into what the shared train and eval jobs
// run (apps/transduction_common/transduction_run.h): the task's data, the model, and exact match by greedy
// decoding. With heap positions (ape_tree) the decoder finds each next node's position from the
// labels decoded so far (greedy_decode_tree: operators have two children, leaves none); with a
// flattened baseline it decodes the sequence (with the cache) for as many steps as the target has.
// Either way an example is right when its decoded labels equal the target's, in the output order.
// Deliberately does not: train (transduction_run.h) or decode user input (treetasks_decode.h).
#pragma once

#include "apps/transduction_common/transduction_run.h"
#include "apps/treetasks/treetasks_settings.h"
#include "attention/transduction/greedy_decoding.h"

namespace posgrad::treetasks_app {

transduction_app::TransductionExperiment experiment(const TreetasksSettings& c);

// The tree decoding of a task: its output order and which labels are operators.
TreeGreedyDecoding tree_decoding(const TreetasksSettings& c, int64_t max_nodes);

}  // namespace posgrad::treetasks_app
