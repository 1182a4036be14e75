// The treetasks app's settings (see treetasks_settings.h).
#include "apps/treetasks/treetasks_settings.h"

namespace posgrad::treetasks_app {

void declare(apps::Settings& s, TreetasksSettings& c) {
  transduction_app::declare_seed_and_device(s, c, "treetasks");
  s.add("task", c.task, "the tree task").choices({"copy", "rotate", "c3", "tree-ops"});
  s.add("order", c.order, "the output order: breadth (breadth-first) or depth (depth-first, pre-order)")
      .choices({"breadth", "depth"});
  s.add("data.vocab_size", c.data.vocab_size, "labels 1..V (0: the task's, 20; 128 for tree-ops)").at_least(0);
  s.add("data.depth_mean", c.data.depth_mean, "tree depths ~ Normal(mean, stddev), truncated").above(0);
  s.add("data.depth_stddev", c.data.depth_stddev, "tree depths ~ Normal(mean, stddev), truncated").at_least(0);
  transduction_app::declare_parts_model_and_recipe(
      s, c,
      "positional scheme: ape_tree or tree_sq (heap positions), or a flattened baseline over the sequence indices: "
      "ape, rope, shaw, sinusoidal, learned_absolute, none, any registered hook");
}

TreeTaskSettings task_settings(const TreetasksSettings& c) {
  const TreeTask task = parse_tree_task(c.task);
  return {.output_order = parse_tree_order(c.order),
          .vocab_size = c.data.vocab_size > 0 ? c.data.vocab_size : default_tree_vocab_size(task),
          .depth_mean = c.data.depth_mean,
          .depth_stddev = c.data.depth_stddev};
}

bool tree_positions(const TreetasksSettings& c) { return c.model.positional == "ape_tree" || c.model.positional == "tree_sq"; }

EncoderDecoderConfig model_config(const TreetasksSettings& c) {
  return transduction_app::model_config(c.model, task_settings(c).vocab_size + 2, tree_positions(c));
}

TransductionSplits make_splits(const TreetasksSettings& c) {
  return make_tree_splits(parse_tree_task(c.task), task_settings(c),
                          {.train = c.parts.train, .dev = c.parts.dev, .test = c.parts.test},
                          static_cast<uint64_t>(c.parts.seed));
}

}  // namespace posgrad::treetasks_app
