// The seqtasks app's experiment (see seqtasks_experiment.h).
#include "apps/seqtasks/seqtasks_experiment.h"

namespace posgrad::seqtasks_app {

transduction_app::TransductionExperiment experiment(const SeqtasksSettings& c) {
  if (c.device != "cpu") fail("device: seqtasks trains on the CPU only for now (got '{}')", c.device);
  transduction_app::TransductionExperiment x;
  x.app = "seqtasks";
  x.description = fmt::format("{} with {}", c.task, c.model.positional);
  x.model = model_config(c);  // first: an unknown scheme is refused before the data are drawn
  x.data = make_splits(c);
  x.seed = static_cast<uint64_t>(c.seed);
  x.train = c.train;
  x.greedy_matches = transduction_app::sequence_greedy_matches;
  x.summary = {{"task", c.task}, {"scheme", c.model.positional}};
  return x;
}

}  // namespace posgrad::seqtasks_app
