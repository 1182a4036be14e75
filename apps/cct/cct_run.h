// The train and eval jobs of the cct app. train() runs the recipe of spec ape.md section 7.4:
// AdamW with a linear warmup then cosine decay per optimizer step, label-smoothed cross-entropy,
// the training images augmented per epoch on the loader's worker thread; after every epoch the
// validation and test accuracies. It reports the two metrics side by side in summary.json:
//   paper   the best test accuracy up to each of train.paper_epochs (150 and 300: the paper's
//           protocol, which selects on the test set)
//   honest  the test accuracy of the checkpoint chosen on the validation split (the epoch of the
//           best validation accuracy; its checkpoint is the run's `best`)
// Checkpoints every epoch (latest and best); --resume continues exactly (the generators of
// dropout and DropPath included). Under mpirun it trains data-parallel (apps/common/
// data_parallel.h; docs/distributed.md). eval scores a checkpoint on the validation or test split.
// Deliberately does not: draw figures (cct_figures.h), run sweeps (posgrad-sweep does).
#pragma once

#include <string>

#include "apps/cct/cct_settings.h"
#include "apps/common/cli.h"

namespace posgrad::cct_app {

void train(const CctSettings& c, const apps::Settings& settings, const apps::TrainRequest& request);
void eval(CctSettings& c, apps::Settings& settings, const std::string& run_dir, const std::string& which,
          const std::string& split);

}  // namespace posgrad::cct_app
