// The settings the two transduction apps share (seqtasks, treetasks): the seed and the device,
// the sizes of the three data parts (data.train, data.dev, data.test, data.seed), the
// encoder-decoder (model.*) and the APE paper's training recipe (train.*, spec ape.md 7.1), as
// typed settings with the paper's full configuration as defaults. Each app's settings derive from
// TransductionSettings and declare their own task and data settings between the shared ones:
//
//   declare_seed_and_device(s, c, "seqtasks");   // seed, device
//   s.add("task", ...); s.add("data.vocab_size", ...) ...
//   declare_parts_model_and_recipe(s, c, "positional scheme: ...");  // data.train .. train.*
//
// Deliberately does not: know the tasks (apps/seqtasks/seqtasks_settings.h,
// apps/treetasks/treetasks_settings.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/common/settings.h"
#include "attention/transduction/encoder_decoder.h"

namespace posgrad::transduction_app {

struct ModelSettings {
  std::string positional = "ape";
  std::vector<std::string> positional_options;  // key=value, e.g. [init=near_identity]
  int64_t width = 512, heads = 8, ff_width = 2048, encoder_layers = 2, decoder_layers = 2;
  double dropout = 0.1, attention_dropout = 0.1;
  bool pre_norm = false, scale_grad_by_freq = true;
  int64_t max_positions = 512;
  std::string attention = "auto";
};

struct TrainSettings {
  int64_t batch_size = 64, epochs = 400, warmup_epochs = 5;
  double lr = 5e-4, weight_decay = 0.01, label_smoothing = 0.0;
  int64_t eval_every = 5, eval_all_after = 200;  // dev loss when epoch % every == 0 or epoch > after
  int64_t eval_batch_size = 100;
  int64_t max_steps = 0;  // stop after this many optimizer steps (0: no limit; smoke runs)
};

// The example counts of the three parts and the one random stream that draws them.
struct PartSettings {
  int64_t train = 6000, dev = 2000, test = 2000;
  int64_t seed = 42;  // one stream for the three parts, the same for every model and seed
};

struct TransductionSettings {
  int64_t seed = 42;  // the model's initialisation, dropout and shuffling (an app may change the default)
  std::string device = "cpu";
  PartSettings parts;  // the keys data.train, data.dev, data.test, data.seed
  ModelSettings model;
  TrainSettings train;
};

// seed and device (`app` names the app in the device's help).
void declare_seed_and_device(apps::Settings& s, TransductionSettings& c, const std::string& app);
// data.train, data.dev, data.test, data.seed, then model.* and train.*; `scheme_help` lists the
// schemes the app's presets use.
void declare_parts_model_and_recipe(apps::Settings& s, TransductionSettings& c, const std::string& scheme_help);

// `scheme_help` lists the schemes the app's presets use.
void declare(apps::Settings& s, ModelSettings& m, const std::string& scheme_help);
void declare(apps::Settings& s, TrainSettings& t);

// The model for a vocabulary of `vocab` tokens; tree_positions: the batch's heap positions.
// An unknown scheme or a malformed option is an Error naming the setting.
EncoderDecoderConfig model_config(const ModelSettings& m, int64_t vocab, bool tree_positions);

}  // namespace posgrad::transduction_app
