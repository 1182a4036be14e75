// The settings of the cct app: the CCT model of spec ape.md section 7.4 and its training recipe as
// typed settings, defaulting to the paper's full configuration (presets in configs/cct/ pick a
// scheme, and configs/cct/quick/ a small model for 2 CPU cores). declare() binds them to a
// Settings; model_config() turns them into the model's config.
// Deliberately does not: load data or build models (cct_data.h, cct_model.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/cct/cct_model.h"
#include "apps/common/settings.h"

namespace posgrad::cct_app {

struct CctSettings {
  int64_t seed = 0;
  std::string device = "cpu";
  struct {
    std::string dir = "";           // "" = POSGRAD_DATA_DIR, then ../shared/data
    int64_t train_batches = 5;      // data_batch_1 .. data_batch_<this>
    int64_t val_images = 5000;      // held out of the training images for model selection
    int64_t test_images = 10000;    // held out too when test_batch.bin is absent
    int64_t small_dataset = 0;      // 0: every image; else a seeded subset of this many (smoke runs)
  } data;
  struct {
    std::string positional = "ape_grid";           // ape_grid | ape | sinusoidal | sinusoidal_2d | learned_absolute | none | ...
    std::vector<std::string> positional_options;   // key=value, e.g. [init=near_identity]
    int64_t layers = 7, width = 256, heads = 4, ff_width = 512;
    int64_t conv_kernel = 3, conv_stride = 1, conv_padding = 0;
    int64_t pool_kernel = 3, pool_stride = 3, pool_padding = 0;
    double dropout = 0.1, ff_dropout = 0.0, attention_dropout = 0.1, drop_path_step = 0.1;
    bool drop_path_rescale = false, pre_norm = false;
    std::string attention = "auto";  // the attention implementation (attention_path.h)
  } model;
  struct {
    bool autoaugment = true;
    int64_t crop_padding = 4;
    bool flip = true;
  } augment;
  struct {
    int64_t batch_size = 128;
    int64_t epochs = 300;
    double lr = 5e-4;
    double weight_decay = 3e-2;
    int64_t warmup_epochs = 5;
    double label_smoothing = 0.1;
    int64_t eval_batch_size = 500;
    std::vector<int64_t> paper_epochs = {150, 300};  // best test accuracy up to each of these epochs
    std::string autocast = "none";                   // none | bf16 (apps/common/autocast_setting.h)
    int64_t max_steps = 0;          // stop after this many optimizer steps (0: no limit; smoke runs)
    int64_t workers_prefetch = 2;   // batches the loader's worker thread builds ahead
  } train;
};

void declare(apps::Settings& s, CctSettings& c);
CctConfig model_config(const CctSettings& c);

}  // namespace posgrad::cct_app
