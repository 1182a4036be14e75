// The charlm jobs (see main.cpp): its settings, the training loop, the full-eval protocol and
// sampling. Deliberately not here: the figures (charlm_figures.h), the text and the record of
// what a run trained on (charlm_text.h) and the model itself (attention/lm/char_transformer.h).
// Shapes: letters of shape_legend.h.
#pragma once

#include <string>
#include <vector>

#include "apps/common/cli.h"
#include "apps/common/settings.h"

namespace posgrad::charlm {

struct CharlmSettings {
  int64_t seed = 1;
  std::string device = "cpu";
  struct {
    std::string path = "tinyshakespeare/input.txt";
    std::string data_dir;
    double train_fraction = 0.9;
    double val_fraction = 0.0;
    bool bytes = false;
  } data;
  struct {
    int64_t layers = 4;
    int64_t width = 128;
    int64_t heads = 4;
    int64_t ff_width = 512;
    double dropout = 0.0;
    bool pre_norm = false;
    std::string positional = "key_pe";
    std::vector<std::string> positional_options;
    bool attend_self = false;
    int64_t max_span = 256;
    std::string span = "adaptive_span";
    std::vector<std::string> span_options;
    double span_ramp = 32;
    double span_init = 0.0;
    double span_loss = 2e-6;
    bool trim = true;
    int64_t trim_granularity = 64;
    std::string attention = "auto";
    bool adaptive_cache = true;
    int64_t cache_margin = 64;
  } model;
  struct {
    std::string optimizer = "adagrad";
    std::string autocast = "none";  // none | bf16 (apps/common/autocast_setting.h)
    double lr = 0.07;
    int64_t warmup = 100;
    double clip = 0.03;
    double grad_clip = 0.0;
    double weight_decay = 0.0;
    int64_t batch_size = 16;
    int64_t segment = 128;
    int64_t steps = 1000;
    double max_minutes = 0.0;
    int64_t log_every = 10;
    int64_t eval_every = 200;
    int64_t eval_blocks = 0;
    int64_t checkpoint_every = 200;
  } train;
  struct {
    int64_t batch = 8;
    int64_t segment = 0;
  } eval;
};

void declare(apps::Settings& s, CharlmSettings& c);

void train(const CharlmSettings& c, const apps::Settings& settings, const apps::TrainRequest& request);
// eval and sample read a finished run: its config.yaml, then the settings `job` gives that concern
// them (eval: device, data.path, data.data_dir, eval.*, model.attention, model.trim; sample: device,
// model.attention; the others are named and ignored), its checkpoint and the vocabulary it trained on.
void evaluate_run(CharlmSettings& c, apps::Settings& settings, const apps::JobSettings& job, const std::string& run_dir,
                  const std::string& which, const std::string& file);

struct SampleRequest {
  std::string run_dir, which = "best", prompt = "\n";
  int64_t tokens = 500;
  double temperature = 1.0;
  int64_t top_k = 0;
  int64_t seed = 1;
  std::string figure;  // PNG of the attention while the last characters were generated ("" = none)
};
void sample_run(CharlmSettings& c, apps::Settings& settings, const apps::JobSettings& job, const SampleRequest& request);

// charlm spans: the dynamic span along a passage (the paper's Figure 5). The passage (--text, or
// --chars characters of the validation split from --offset) goes through the model in blocks of
// the training segment from a zero cache, one stream; each character's z_t is averaged over the
// heads of each layer and over the layers. Prints the mean z_t, where the next character starts a
// word (z_t is the span that predicts character t + 1: a space or newline before a letter) and
// elsewhere; --figure draws the text coloured by z_t and z_t along it per layer.
struct SpanTextRequest {
  std::string run_dir, which = "best", text, figure;
  int64_t offset = 0, chars = 256;
};
void span_text_run(CharlmSettings& c, apps::Settings& settings, const apps::JobSettings& job,
                   const SpanTextRequest& request);

}  // namespace posgrad::charlm
