// The seqtasks app's experiment (see seqtasks_experiment.h).
#include "apps/seqtasks/seqtasks_experiment.h"

namespace posgrad::seqtasks_app {

transduction_app::TransductionExperiment experiment(const SeqtasksSettings& c) {
  transduction_app::TransductionExperiment x =
      transduction_app::shared_experiment(c, "seqtasks", fmt::format("{} with {}", c.task, c.model.positional));
  x.model = model_config(c);  // first: an unknown scheme is refused before the data are drawn
  x.data = make_splits(c);
  x.greedy_matches = transduction_app::sequence_greedy_matches;
  x.summary = {{"task", c.task}, {"scheme", c.model.positional}};
  return x;
}

}  // namespace posgrad::seqtasks_app
