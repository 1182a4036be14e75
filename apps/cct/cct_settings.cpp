// The cct app's settings (see cct_settings.h).
#include "apps/cct/cct_settings.h"

#include <algorithm>

#include <fmt/ranges.h>

#include "apps/cct/sinusoidal_grid.h"
#include "apps/common/autocast_setting.h"
#include "attention/registry.h"
#include "tensor/error.h"

namespace posgrad::cct_app {

void declare(apps::Settings& s, CctSettings& c) {
  s.add("seed", c.seed, "initialisation, dropout, DropPath, shuffling, augmentation and the held-out splits").at_least(0);
  s.add("device", c.device, "cpu, cuda or cuda:N (needs a CUDA build and a GPU)");
  s.add("data.dir", c.data.dir, "data folder holding cifar10/ (\"\": POSGRAD_DATA_DIR, then ../shared/data)");
  s.add("data.train_batches", c.data.train_batches, "read data_batch_1 .. data_batch_<this>").at_least(1).at_most(5);
  s.add("data.val_images", c.data.val_images, "training images held out for validation (model selection)").at_least(1);
  s.add("data.test_images", c.data.test_images,
        "training images held out as the test split when test_batch.bin is absent (else the official 10,000)")
      .at_least(1);
  s.add("data.small_dataset", c.data.small_dataset, "0: every image; else a seeded subset of this many (smoke runs)")
      .at_least(0);
  s.add("model.positional", c.model.positional,
        "positional scheme: ape_grid, ape (sequence), sinusoidal (1-D over the flat index, the paper's \"Sinusoidal 2D\"), "
        "sinusoidal_2d (true 2-D), learned_absolute, none, or any registered hook");
  s.add("model.positional_options", c.model.positional_options,
        "options of the scheme as key=value (APE: init=rope_like|near_identity, decay=0.98)");
  s.add("model.layers", c.model.layers, "encoder blocks").at_least(0);
  s.add("model.width", c.model.width, "model width D (the conv's output channels)").at_least(1);
  s.add("model.heads", c.model.heads, "attention heads H (must divide the width)").at_least(1);
  s.add("model.ff_width", c.model.ff_width, "FFN hidden width").at_least(1);
  s.add("model.conv_kernel", c.model.conv_kernel, "tokenizer conv kernel size").at_least(1);
  s.add("model.conv_stride", c.model.conv_stride, "tokenizer conv stride").at_least(1);
  s.add("model.conv_padding", c.model.conv_padding, "tokenizer conv zero padding").at_least(0);
  s.add("model.pool_kernel", c.model.pool_kernel, "tokenizer max-pool kernel").at_least(1);
  s.add("model.pool_stride", c.model.pool_stride, "tokenizer max-pool stride").at_least(1);
  s.add("model.pool_padding", c.model.pool_padding, "tokenizer max-pool padding (at most half the kernel)").at_least(0);
  s.add("model.dropout", c.model.dropout, "dropout on the tokens (input dropout)").at_least(0).at_most(1);
  s.add("model.ff_dropout", c.model.ff_dropout, "dropout between the FFN's layers").at_least(0).at_most(1);
  s.add("model.attention_dropout", c.model.attention_dropout,
        "dropout on the attention probabilities (the recipe's attention-logit dropout; such layers train on the reference path)")
      .at_least(0).at_most(0.9);
  s.add("model.drop_path_step", c.model.drop_path_step, "DropPath probability of layer l is this times l").at_least(0);
  s.add("model.drop_path_rescale", c.model.drop_path_rescale,
        "rescale kept examples by 1/(1-p) (false: the released code's unscaled DropPath)");
  s.add("model.pre_norm", c.model.pre_norm, "pre-LN blocks and a final LayerNorm (false: the released code's post-LN)");
  s.add("model.attention", c.model.attention, attention_path_help()).choices(attention_path_names());
  s.add("augment.autoaugment", c.augment.autoaugment, "AutoAugment's CIFAR-10 policy");
  s.add("augment.crop_padding", c.augment.crop_padding, "random crop of the zero-padded image (0: none)").at_least(0);
  s.add("augment.flip", c.augment.flip, "random horizontal flip");
  s.add("train.batch_size", c.train.batch_size, "images per batch").at_least(1);
  s.add("train.epochs", c.train.epochs, "epochs").at_least(1);
  s.add("train.lr", c.train.lr, "peak AdamW learning rate").above(0);
  add_autocast_setting(s, c.train.autocast);
  s.add("train.weight_decay", c.train.weight_decay, "AdamW weight decay").at_least(0);
  s.add("train.warmup_epochs", c.train.warmup_epochs, "linear warmup epochs before the cosine decay").at_least(0);
  s.add("train.label_smoothing", c.train.label_smoothing, "label smoothing of the cross-entropy").at_least(0).at_most(0.99);
  s.add("train.eval_batch_size", c.train.eval_batch_size, "images per evaluation batch").at_least(1);
  s.add("train.paper_epochs", c.train.paper_epochs, "the paper's metric: best test accuracy up to each of these epochs");
  s.add("train.max_steps", c.train.max_steps, "stop after this many optimizer steps (0: no limit; smoke runs)").at_least(0);
  s.add("train.workers_prefetch", c.train.workers_prefetch, "batches the loader's worker thread augments ahead").at_least(0);
}

CctConfig model_config(const CctSettings& c) {
  register_sinusoidal_grid();
  const auto names = hook_names();
  if (std::find(names.begin(), names.end(), c.model.positional) == names.end())
    fail("model.positional: unknown scheme '{}' (registered: {})", c.model.positional, fmt::join(names, ", "));
  CctConfig m;
  m.width = c.model.width;
  m.heads = c.model.heads;
  m.layers = c.model.layers;
  m.ff_width = c.model.ff_width;
  m.conv_kernel = c.model.conv_kernel;
  m.conv_stride = c.model.conv_stride;
  m.conv_padding = c.model.conv_padding;
  m.pool_kernel = c.model.pool_kernel;
  m.pool_stride = c.model.pool_stride;
  m.pool_padding = c.model.pool_padding;
  m.positional = c.model.positional;
  for (const std::string& kv : c.model.positional_options) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) fail("model.positional_options: '{}' is not key=value (e.g. init=near_identity)", kv);
    m.positional_options[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  m.dropout = c.model.dropout;
  m.ff_dropout = c.model.ff_dropout;
  m.attention_dropout = c.model.attention_dropout;
  m.drop_path_step = c.model.drop_path_step;
  m.drop_path_rescale = c.model.drop_path_rescale;
  m.pre_norm = c.model.pre_norm;
  m.path = attention_path_from_name(c.model.attention);
  return m;
}

}  // namespace posgrad::cct_app
