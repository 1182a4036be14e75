// The settings of the seqtasks app: the APE paper's sequence transduction tasks (COPY, REPEAT,
// REVERSE; spec ape.md 7.2) with the shared settings (apps/transduction_common/transduction_settings.h),
// defaulting to the paper's full configuration (configs/seqtasks/full.yaml repeats it;
// configs/seqtasks/quick.yaml is the 2-core size; configs/seqtasks/schemes/ picks a scheme).
// Deliberately does not: load data, build models or train (transduction_run.h).
#pragma once

#include <cstdint>
#include <string>

#include "apps/transduction_common/transduction_settings.h"
#include "datasets/transduction/sequence_tasks.h"

namespace posgrad::seqtasks_app {

// seed (default 42, the paper: 2310, 42, 1312), device, data.train/dev/test/seed, model.*, train.*:
// transduction_settings.h.
struct SeqtasksSettings : transduction_app::TransductionSettings {
  std::string task = "reverse";  // copy | repeat | reverse
  struct {
    int64_t vocab_size = 20;
    double length_mean = 100.0, length_stddev = 10.0;
  } data;
};

void declare(apps::Settings& s, SeqtasksSettings& c);
EncoderDecoderConfig model_config(const SeqtasksSettings& c);
// The task's three parts, from data.seed.
TransductionSplits make_splits(const SeqtasksSettings& c);

}  // namespace posgrad::seqtasks_app
