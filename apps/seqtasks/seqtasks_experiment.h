// The seqtasks app's experiment: its settings turned into what the shared train and eval jobs run
// (transduction_run.h): the task's data, the model, and exact match by greedy decoding of the
// sequence (sequence_greedy_matches).
// Deliberately does not: train (transduction_run.h) or decode user input (seqtasks_decode.h).
#pragma once

#include "apps/seqtasks/seqtasks_settings.h"
#include "apps/transduction_common/transduction_run.h"

namespace posgrad::seqtasks_app {

transduction_app::TransductionExperiment experiment(const SeqtasksSettings& c);

}  // namespace posgrad::seqtasks_app
