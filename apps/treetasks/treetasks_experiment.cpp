// The treetasks app's experiment (see treetasks_experiment.h).
#include "apps/treetasks/treetasks_experiment.h"

#include <algorithm>
#include <set>


namespace posgrad::treetasks_app {

TreeGreedyDecoding tree_decoding(const TreetasksSettings& c, int64_t max_nodes) {
  const TreeTaskSettings task = task_settings(c);
  const TreeLabels labels = tree_task_labels(parse_tree_task(c.task), task.vocab_size);
  const std::set<int64_t> operators(labels.operators.begin(), labels.operators.end());
  return {.depth_first = task.output_order == TreeOrder::DepthFirst,
          .is_operator = [operators](int64_t label) { return operators.count(label) != 0; },
          .max_nodes = max_nodes,
          .max_depth = kMaxTreeDepth};
}

transduction_app::TransductionExperiment experiment(const TreetasksSettings& c) {
  transduction_app::TransductionExperiment x = transduction_app::shared_experiment(
      c, "treetasks",
      fmt::format("{} ({}-first output) with {}{}", c.task, c.order, c.model.positional,
                  tree_positions(c) ? " on heap positions" : " on the flattened sequence"));
  x.model = model_config(c);  // first: an unknown scheme is refused before the data are drawn
  x.data = make_splits(c);
  if (tree_positions(c)) {
    const TreetasksSettings settings = c;
    x.greedy_matches = [settings](EncoderDecoder& model, const std::vector<TransductionExample>& examples,
                                  const std::vector<int64_t>& indices, const TransductionBatch& batch) {
      size_t longest = 0;
      for (int64_t i : indices) longest = std::max(longest, examples[static_cast<size_t>(i)].target.size());
      const auto trees = greedy_decode_tree(model, batch.source, batch.source_padding(), batch.source_heap,
                                            tree_decoding(settings, static_cast<int64_t>(longest)));
      std::vector<bool> right(indices.size());
      for (size_t b = 0; b < indices.size(); ++b) right[b] = trees[b].labels == examples[static_cast<size_t>(indices[b])].target;
      return right;
    };
  } else {
    x.greedy_matches = transduction_app::sequence_greedy_matches;
  }
  x.summary = {{"task", c.task}, {"order", c.order}, {"scheme", c.model.positional}, {"tree_positions", tree_positions(c)}};
  return x;
}

}  // namespace posgrad::treetasks_app
