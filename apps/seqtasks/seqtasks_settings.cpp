// The seqtasks app's settings (see seqtasks_settings.h).
#include "apps/seqtasks/seqtasks_settings.h"

namespace posgrad::seqtasks_app {

void declare(apps::Settings& s, SeqtasksSettings& c) {
  transduction_app::declare_seed_and_device(s, c, "seqtasks");
  s.add("task", c.task, "the transduction task").choices({"copy", "repeat", "reverse"});
  s.add("data.vocab_size", c.data.vocab_size, "content tokens 1..V (the model's vocabulary is V + 2)").at_least(2);
  s.add("data.length_mean", c.data.length_mean, "word lengths ~ Normal(mean, stddev), truncated").above(0);
  s.add("data.length_stddev", c.data.length_stddev, "word lengths ~ Normal(mean, stddev), truncated").at_least(0);
  transduction_app::declare_parts_model_and_recipe(
      s, c, "positional scheme: ape, rope, shaw, sinusoidal, learned_absolute, none, or any registered hook");
}

EncoderDecoderConfig model_config(const SeqtasksSettings& c) {
  return transduction_app::model_config(c.model, c.data.vocab_size + 2, /*tree_positions=*/false);
}

TransductionSplits make_splits(const SeqtasksSettings& c) {
  const SequenceTaskSettings task{.vocab_size = c.data.vocab_size, .length_mean = c.data.length_mean,
                                  .length_stddev = c.data.length_stddev};
  return make_sequence_splits(parse_sequence_task(c.task), task, {.train = c.parts.train, .dev = c.parts.dev, .test = c.parts.test},
                              static_cast<uint64_t>(c.parts.seed));
}

}  // namespace posgrad::seqtasks_app
