// The posattn app's settings (see posattn_settings.h).
#include "apps/posattn/posattn_settings.h"

#include <algorithm>

#include <fmt/ranges.h>

#include "apps/common/autocast_setting.h"
#include "attention/attention_path.h"
#include "attention/registry.h"
#include "tensor/error.h"

namespace posgrad::posattn_app {

void declare(apps::Settings& s, PosattnSettings& c) {
  s.add("seed", c.seed, "random_state: initialisation, dropout, shuffling and the seeded 80/20 split").at_least(0);
  s.add("device", c.device, "cpu, cuda or cuda:N (needs a CUDA build and a GPU)");
  s.add("data.dataset", c.data.dataset, "cifar10 (32x32x3), mnist (28x28x1) or smnist (sequential MNIST, 784x1)")
      .choices({"cifar10", "mnist", "smnist"});
  s.add("data.dir", c.data.dir, "data folder holding cifar10/ or mnist/ (\"\": POSGRAD_DATA_DIR, then ../shared/data)");
  s.add("data.image_size", c.data.image_size, "0: native size; else each image is average-pooled to this side (must divide it)")
      .at_least(0);
  s.add("data.small_dataset", c.data.small_dataset, "0: all images; else a seeded random subset of this many (before the split)")
      .at_least(0);
  s.add("data.train_batches", c.data.train_batches,
        "cifar10 only: read data_batch_1 .. data_batch_<this> (5: all 50,000 images; fewer for a partial copy)")
      .at_least(1)
      .at_most(5);
  s.add("data.val_fraction", c.data.val_fraction, "share of the images held out for validation").above(0).at_most(0.9);
  s.add("model.positional", c.model.positional, "positional scheme: any registered hook (txl_baseline and siren in the thesis)");
  s.add("model.positional_options", c.model.positional_options, "options of the scheme as key=value (e.g. [omega=10, hidden=64])");
  s.add("model.positional_dims", c.model.positional_dims, "1: the pixels as one sequence; 2: the image grid").at_least(1).at_most(2);
  s.add("model.span", c.model.span, "a learned Gaussian span (gaussian_span) in every layer");
  s.add("model.sigma", c.model.sigma, "initial sigma of the span").above(0);
  s.add("model.threshold", c.model.threshold, "span threshold t; <= 0: no box (every key kept)");
  s.add("model.multiply", c.model.multiply, "which logits the Gaussian multiplies").choices({"all_logits", "positional_logits"});
  s.add("model.pooling", c.model.pooling, "token pooling before the output net").choices({"last", "mean", "max"});
  s.add("model.layers", c.model.layers, "encoder blocks").at_least(1);
  s.add("model.width", c.model.width, "model width D").at_least(1);
  s.add("model.heads", c.model.heads, "attention heads H (must divide the width)").at_least(1);
  s.add("model.ff_width", c.model.ff_width, "FFN hidden width").at_least(1);
  s.add("model.output_hidden", c.model.output_hidden, "output MLP hidden width").at_least(1);
  s.add("model.dropout", c.model.dropout, "dropout (input pixels, attention output, FFN, output MLP)").at_least(0).at_most(1);
  s.add("model.attention", c.model.attention, attention_path_help()).choices(attention_path_names());
  // The old name (runs written before it still load): 'fast' was the window path, now gone; its numbers are
  // those of auto.
  s.rename("model.path", "model.attention", {{"auto", "auto"}, {"reference", "reference"}, {"fast", "auto"}});
  s.add("train.batch_size", c.train.batch_size, "images per batch").at_least(1);
  s.add("train.accumulation", c.train.accumulation, "batches per optimizer step (the loss is not divided, as the thesis)")
      .at_least(1);
  s.add("train.lr", c.train.lr, "Adam learning rate").above(0);
  s.add("train.epochs", c.train.epochs, "epochs").at_least(1);
  s.add("train.eval_batch_size", c.train.eval_batch_size, "images per validation batch").at_least(1);
  s.add("train.checkpoint_every", c.train.checkpoint_every, "optimizer steps between extra checkpoints (0: at epoch ends only)")
      .at_least(0);
  s.add("train.max_steps", c.train.max_steps, "stop after this many optimizer steps (0: no limit; smoke runs)").at_least(0);
  add_autocast_setting(s, c.train.autocast);
  s.add("debug.nan_parameter", c.debug.nan_parameter, "tests only: a parameter (state_dict name) to poison with a NaN");
  s.add("debug.nan_at_step", c.debug.nan_at_step, "tests only: poison it after this optimizer step").at_least(0);
}

PosattnClassifierConfig model_config(const PosattnSettings& c, const std::vector<int64_t>& structure, int64_t channels,
                                     int64_t classes) {
  if (c.model.width % c.model.heads != 0)
    fail("model.heads ({}) must divide model.width ({})", c.model.heads, c.model.width);
  const auto names = hook_names();
  if (std::find(names.begin(), names.end(), c.model.positional) == names.end())
    fail("model.positional: unknown scheme '{}' (registered: {})", c.model.positional, fmt::join(names, ", "));
  if (c.model.positional_dims == 2 && structure.size() != 2)
    fail("model.positional_dims = 2 needs an image grid, but data.dataset '{}' is a sequence of {} tokens "
         "(use model.positional_dims=1, or data.dataset=mnist)",
         c.data.dataset, structure.empty() ? 0 : structure[0]);
  PosattnClassifierConfig m;
  m.input_dim = channels;
  m.width = c.model.width;
  m.heads = c.model.heads;
  m.layers = c.model.layers;
  m.ff_width = c.model.ff_width;
  m.output_hidden = c.model.output_hidden;
  m.classes = classes;
  m.dropout = c.model.dropout;
  m.positional = c.model.positional;
  for (const std::string& kv : c.model.positional_options) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      fail("model.positional_options: '{}' is not key=value (e.g. omega=10)", kv);
    m.positional_options[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  m.span = c.model.span;
  m.sigma = c.model.sigma;
  m.threshold = c.model.threshold;
  m.multiply = c.model.multiply;
  m.dims = c.model.positional_dims;
  m.structure = structure;
  m.pooling = c.model.pooling;
  m.path = attention_path_from_name(c.model.attention);
  return m;
}

}  // namespace posgrad::posattn_app
