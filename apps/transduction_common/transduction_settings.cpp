// The transduction apps' shared settings (see transduction_settings.h).
#include "apps/transduction_common/transduction_settings.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tensor/error.h"

namespace posgrad::transduction_app {

void declare_seed_and_device(apps::Settings& s, TransductionSettings& c, const std::string& app) {
  s.add("seed", c.seed, "the model's initialisation, dropout and shuffling (the data have their own data.seed)").at_least(0);
  s.add("device", c.device, fmt::format("cpu, cuda or cuda:N: where {} trains and scores", app));
}

void declare_parts_model_and_recipe(apps::Settings& s, TransductionSettings& c, const std::string& scheme_help) {
  s.add("data.train", c.parts.train, "training examples").at_least(1);
  s.add("data.dev", c.parts.dev, "development examples (checkpoint selection)").at_least(1);
  s.add("data.test", c.parts.test, "test examples").at_least(1);
  s.add("data.seed", c.parts.seed, "the one random stream of the three parts (the paper: 42 for every run)").at_least(0);
  declare(s, c.model, scheme_help);
  declare(s, c.train);
}

void declare(apps::Settings& s, ModelSettings& m, const std::string& scheme_help) {
  s.add("model.positional", m.positional, scheme_help);
  s.add("model.positional_options", m.positional_options,
        "options of the scheme as key=value (ape: init=near_identity, decay=0.98; rope: trainable=false; shaw: window=100)");
  s.add("model.width", m.width, "model width D").at_least(1);
  s.add("model.heads", m.heads, "attention heads H (must divide the width)").at_least(1);
  s.add("model.ff_width", m.ff_width, "FFN hidden width").at_least(1);
  s.add("model.encoder_layers", m.encoder_layers, "encoder layers").at_least(0);
  s.add("model.decoder_layers", m.decoder_layers, "decoder layers").at_least(1);
  s.add("model.dropout", m.dropout, "dropout on the embeddings and every residual branch").at_least(0).at_most(0.9);
  s.add("model.attention_dropout", m.attention_dropout,
        "dropout on the attention probabilities (the released code drops logits; such layers train on the reference path)")
      .at_least(0).at_most(0.9);
  s.add("model.pre_norm", m.pre_norm, "pre-LN layers and final LayerNorms (false: the released code's post-LN)");
  s.add("model.scale_grad_by_freq", m.scale_grad_by_freq,
        "divide each embedding row's gradient by its count in the batch (the released code's embedding)");
  s.add("model.max_positions", m.max_positions,
        "the scheme's position count (learned_absolute's table size unless its size option says otherwise)").at_least(1);
  s.add("model.attention", m.attention, attention_path_help()).choices(attention_path_names());
}

void declare(apps::Settings& s, TrainSettings& t) {
  s.add("train.batch_size", t.batch_size, "examples per batch").at_least(1);
  s.add("train.epochs", t.epochs, "epochs").at_least(1);
  s.add("train.warmup_epochs", t.warmup_epochs, "linear warmup epochs (from 1e-7) before the cosine decay (to 1e-9)").at_least(0);
  s.add("train.lr", t.lr, "peak AdamW learning rate").above(0);
  s.add("train.weight_decay", t.weight_decay, "AdamW weight decay").at_least(0);
  s.add("train.label_smoothing", t.label_smoothing, "label smoothing of the training loss").at_least(0).at_most(0.99);
  s.add("train.eval_every", t.eval_every, "the dev loss after every this many epochs ...").at_least(1);
  s.add("train.eval_all_after", t.eval_all_after, "... and after every epoch past this one").at_least(0);
  s.add("train.eval_batch_size", t.eval_batch_size, "examples per evaluation batch").at_least(1);
  s.add("train.max_steps", t.max_steps, "stop after this many optimizer steps (0: no limit; smoke runs)").at_least(0);
}

EncoderDecoderConfig model_config(const ModelSettings& m, int64_t vocab, bool tree_positions) {
  const auto names = hook_names();
  if (std::find(names.begin(), names.end(), m.positional) == names.end())
    fail("model.positional: unknown scheme '{}' (registered: {})", m.positional, fmt::join(names, ", "));
  EncoderDecoderConfig c;
  c.vocab = vocab;
  c.width = m.width;
  c.heads = m.heads;
  c.ff_width = m.ff_width;
  c.encoder_layers = m.encoder_layers;
  c.decoder_layers = m.decoder_layers;
  c.dropout = m.dropout;
  c.attention_dropout = m.attention_dropout;
  c.pre_norm = m.pre_norm;
  c.scale_grad_by_freq = m.scale_grad_by_freq;
  c.max_positions = m.max_positions;
  c.tree_positions = tree_positions;
  std::map<std::string, std::string> options;
  for (const std::string& kv : m.positional_options) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) fail("model.positional_options: '{}' is not key=value (e.g. init=near_identity)", kv);
    options[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  c.positional = {m.positional, HookOptions(options)};
  c.path = attention_path_from_name(m.attention);
  return c;
}

}  // namespace posgrad::transduction_app
