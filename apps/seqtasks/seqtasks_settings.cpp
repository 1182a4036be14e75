// The seqtasks app's settings (see seqtasks_settings.h).
#include "apps/seqtasks/seqtasks_settings.h"

namespace posgrad::seqtasks_app {

void declare(apps::Settings& s, SeqtasksSettings& c) {
  s.add("seed", c.seed, "the model's initialisation, dropout and shuffling (the data have their own data.seed)").at_least(0);
  s.add("device", c.device, "cpu (the only device seqtasks trains on for now)");
  s.add("task", c.task, "the transduction task").choices({"copy", "repeat", "reverse"});
  s.add("data.vocab_size", c.data.vocab_size, "content tokens 1..V (the model's vocabulary is V + 2)").at_least(2);
  s.add("data.length_mean", c.data.length_mean, "word lengths ~ Normal(mean, stddev), truncated").above(0);
  s.add("data.length_stddev", c.data.length_stddev, "word lengths ~ Normal(mean, stddev), truncated").at_least(0);
  s.add("data.train", c.data.train, "training examples").at_least(1);
  s.add("data.dev", c.data.dev, "development examples (checkpoint selection)").at_least(1);
  s.add("data.test", c.data.test, "test examples").at_least(1);
  s.add("data.seed", c.data.seed, "the one random stream of the three parts (the paper: 42 for every run)").at_least(0);
  transduction_app::declare(s, c.model,
                            "positional scheme: ape, rope, shaw, sinusoidal, learned_absolute, none, or any registered hook");
  transduction_app::declare(s, c.train);
}

EncoderDecoderConfig model_config(const SeqtasksSettings& c) {
  return transduction_app::model_config(c.model, c.data.vocab_size + 2, /*tree_positions=*/false);
}

TransductionSplits make_splits(const SeqtasksSettings& c) {
  const SequenceTaskSettings task{.vocab_size = c.data.vocab_size, .length_mean = c.data.length_mean,
                                  .length_stddev = c.data.length_stddev};
  return make_sequence_splits(parse_sequence_task(c.task), task, {.train = c.data.train, .dev = c.data.dev, .test = c.data.test},
                              static_cast<uint64_t>(c.data.seed));
}

}  // namespace posgrad::seqtasks_app
