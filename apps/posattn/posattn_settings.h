// The settings of the posattn app: every knob of the thesis protocol (posattn spec section 8) as a
// typed setting, with the thesis's values as defaults (the 2-D SIREN arm without span; presets in
// configs/posattn/ pick the arms). declare() binds them to a Settings; model_config() turns them
// into the classifier's config for a given image size.
//
// Deliberately does not: load data or build models (image_data.h, the app's main.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/common/settings.h"
#include "attention/posattn_classifier.h"

namespace posgrad::posattn_app {

struct PosattnSettings {
  int64_t seed = 361;           // thesis random_state: initialisation, dropout, shuffling and the 80/20 split
  std::string device = "cpu";
  struct {
    std::string dataset = "cifar10";  // cifar10 | mnist | smnist (sequential MNIST: one axis of 784)
    std::string dir = "";             // the data folder ("" = POSGRAD_DATA_DIR or ../shared/data)
    int64_t image_size = 0;           // 0 = native (32 / 28); else average-pooled to this side
    int64_t small_dataset = 0;        // 0 = all images; else a seeded random subset of this many
    int64_t train_batches = 5;        // cifar10: read data_batch_1 .. data_batch_<this> (a partial copy)
    double val_fraction = 0.2;
  } data;
  struct {
    std::string positional = "siren";               // any registered hook name
    std::vector<std::string> positional_options;    // "key=value" options of that hook
    int64_t positional_dims = 2;                    // 1: a sequence of N tokens; 2: the image grid
    bool span = false;
    double sigma = 0.3;
    double threshold = -1;                          // <= 0: no box
    std::string multiply = "all_logits";
    std::string pooling = "last";
    int64_t layers = 6, width = 64, heads = 8, ff_width = 128, output_hidden = 64;
    double dropout = 0.1;
    std::string attention = "auto";                 // attention path: auto | reference | fused
  } model;
  struct {
    int64_t batch_size = 20;
    int64_t accumulation = 2;     // batches per optimizer step; the loss is NOT divided (thesis)
    double lr = 1e-3;
    int64_t epochs = 80;
    int64_t eval_batch_size = 100;
    int64_t checkpoint_every = 0; // optimizer steps between extra checkpoints (0: epoch ends only)
    int64_t max_steps = 0;        // stop after this many optimizer steps (0: no limit; for smoke runs)
    std::string autocast = "none";  // none | bf16 (apps/common/autocast_setting.h)
  } train;
  struct {
    std::string nan_parameter = "";  // tests: set this parameter's first value to NaN ...
    int64_t nan_at_step = 0;         // ... before the forward that follows this optimizer step
  } debug;
};

void declare(apps::Settings& s, PosattnSettings& c);

// The classifier config for images of `structure` (S0, S1) or sequences (N) with C channels.
PosattnClassifierConfig model_config(const PosattnSettings& c, const std::vector<int64_t>& structure,
                                     int64_t channels, int64_t classes);

}  // namespace posgrad::posattn_app
