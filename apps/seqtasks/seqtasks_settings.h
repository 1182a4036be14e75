// The settings of the seqtasks app: the APE paper's sequence transduction tasks (COPY, REPEAT,
// REVERSE; spec ape.md 7.2) with the shared model and recipe settings (transduction_settings.h),
// defaulting to the paper's full configuration (configs/seqtasks/full.yaml repeats it;
// configs/seqtasks/quick.yaml is the 2-core size; configs/seqtasks/schemes/ picks a scheme).
// Deliberately does not: load data, build models or train (transduction_run.h).
#pragma once

#include <cstdint>
#include <string>

#include "apps/seqtasks/transduction_settings.h"
#include "datasets/transduction/sequence_tasks.h"

namespace posgrad::seqtasks_app {

struct SeqtasksSettings {
  int64_t seed = 42;  // the model's initialisation, dropout and shuffling (the paper: 2310, 42, 1312)
  std::string device = "cpu";
  std::string task = "reverse";  // copy | repeat | reverse
  struct {
    int64_t vocab_size = 20;
    double length_mean = 100.0, length_stddev = 10.0;
    int64_t train = 6000, dev = 2000, test = 2000;
    int64_t seed = 42;  // one stream for the three parts, the same for every model and seed
  } data;
  transduction_app::ModelSettings model;
  transduction_app::TrainSettings train;
};

void declare(apps::Settings& s, SeqtasksSettings& c);
EncoderDecoderConfig model_config(const SeqtasksSettings& c);
// The task's three parts, from data.seed.
TransductionSplits make_splits(const SeqtasksSettings& c);

}  // namespace posgrad::seqtasks_app
