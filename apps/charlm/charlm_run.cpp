// The charlm jobs (see charlm_run.h and main.cpp).
// Shapes: letters of shape_legend.h.
#include "apps/charlm/charlm_run.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <cstdio>
#include <numeric>
#include <optional>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "apps/charlm/charlm_figures.h"
#include "apps/charlm/charlm_text.h"
#include "apps/common/autocast_setting.h"
#include "apps/common/data_parallel.h"
#include "apps/common/device_setting.h"
#include "apps/common/finite_guard.h"
#include "apps/common/optimizer_choice.h"
#include "apps/common/progress.h"
#include "apps/common/run_checkpoints.h"
#include "apps/common/run_dir.h"
#include "attention/attention_path.h"
#include "attention/lm/char_transformer.h"
#include "attention/registry.h"
#include "datasets/char_corpus.h"
#include "datasets/data_dir.h"
#include "datasets/text_streams.h"
#include "nn/atomic_file.h"
#include "nn/checkpoint.h"
#include "nn/clip_grad.h"
#include "nn/losses.h"
#include "nn/mask_rows.h"
#include "nn/lr_schedule.h"
#include "nn/safetensors.h"
#include "tensor/autocast.h"
#include "tensor/device.h"

namespace posgrad::charlm {

using namespace posgrad::apps;

void declare(Settings& s, CharlmSettings& c) {
  s.add("seed", c.seed, "seeds the initialisation, dropout and the stream restarts");
  s.add("device", c.device, "cpu, cuda or cuda:N (needs a CUDA build and a GPU)");
  s.add("data.path", c.data.path, "text file (plain or gzip); relative paths not found here are looked up in the data folder");
  s.add("data.data_dir", c.data.data_dir, "the data folder (default: ../shared/data, see datasets/data_dir.h)");
  s.add("data.train_fraction", c.data.train_fraction, "first part of the file for training, the rest for validation").above(0).at_most(1);
  s.add("data.val_fraction", c.data.val_fraction, "validation = this fraction of the file after the training split (0: all the rest)").at_least(0).at_most(1);
  s.add("data.bytes", c.data.bytes, "vocabulary = all 256 bytes (else the characters of the training split)");
  s.add("model.layers", c.model.layers, "transformer layers").at_least(1);
  s.add("model.width", c.model.width, "model width D").at_least(1);
  s.add("model.heads", c.model.heads, "attention heads H (D divisible by H)").at_least(1);
  s.add("model.ff_width", c.model.ff_width, "feed-forward inner width").at_least(1);
  s.add("model.dropout", c.model.dropout, "dropout on attention probabilities and FF ReLU outputs").at_least(0).at_most(0.99);
  s.add("model.pre_norm", c.model.pre_norm, "pre-LN layers (false: the paper's post-LN)");
  s.add("model.positional", c.model.positional,
        fmt::format("positional scheme, a registered relative one ({}; key_pe is shared by the layers; absolute "
                    "schemes are refused)",
                    fmt::join(hook_names(), ", ")))
      .choices(hook_names());
  s.add("model.positional_options", c.model.positional_options,
        "options of a registered scheme, key=value (e.g. [buckets=32]; docs/positional-schemes.md)");
  s.rename("model.position", "model.positional");  // the old name: runs written before it still load
  s.add("model.attend_self", c.model.attend_self, "also attend to the current token (distance 0; not with key_pe)");
  s.add("model.max_span", c.model.max_span, "maximum span S (the attention window without adaptive span)").at_least(1);
  s.add("model.span", c.model.span,
        "the span next to the positional scheme: adaptive_span (each head learns its span: soft mask, span loss, "
        "clamp), dynamic_span (each token's span from its input, with the span loss on the mean span) or none")
      .choices({"none", "adaptive_span", "dynamic_span"});
  s.add("model.span_options", c.model.span_options,
        "the span's other options, key=value (dynamic_span: [bias_init=-4]; S, R and lambda are the settings below)");
  // The old switch (runs written before model.span still load): true was the adaptive span.
  s.rename("model.adaptive_span", "model.span",
           {{"true", "adaptive_span"}, {"yes", "adaptive_span"}, {"on", "adaptive_span"}, {"1", "adaptive_span"},
            {"false", "none"}, {"no", "none"}, {"off", "none"}, {"0", "none"}});
  s.add("model.span_ramp", c.model.span_ramp, "ramp length R of the soft mask (both spans)").above(0);
  s.add("model.span_init", c.model.span_init, "initial c = z / S (adaptive_span)").at_least(0).at_most(1);
  s.add("model.span_loss", c.model.span_loss, "span loss coefficient lambda (both spans)").at_least(0);
  s.add("model.trim", c.model.trim,
        "cut keys to the layer's longest span + ramp (changes numbers only through the renormaliser's 1e-8: each "
        "kept weight by < 1e-8 / the head's in-span mass; docs/experiments/charlm.md)");
  s.add("model.trim_granularity", c.model.trim_granularity, "trim in steps of this many keys").at_least(1);
  s.add("model.attention", c.model.attention, attention_path_help()).choices(attention_path_names());
  // The old name (runs written before it still load): true was the fused path where it can run, false the reference.
  s.rename("model.fused", "model.attention",
           {{"true", "auto"}, {"yes", "auto"}, {"on", "auto"}, {"1", "auto"},
            {"false", "reference"}, {"no", "reference"}, {"off", "reference"}, {"0", "reference"}});
  s.add("model.adaptive_cache", c.model.adaptive_cache, "cache the window + cache_margin inputs (else S)");
  s.add("model.cache_margin", c.model.cache_margin, "extra cached inputs in case a span grows").at_least(0);
  s.add("train.optimizer", c.train.optimizer, "optimizer (sgd: plain steps)").choices({"adagrad", "adamw", "sgd"});
  s.add("train.lr", c.train.lr, "peak learning rate").above(0);
  add_autocast_setting(s, c.train.autocast);
  s.add("train.warmup", c.train.warmup, "linear warm-up updates").at_least(0);
  s.add("train.clip", c.train.clip, "adagrad: per-tensor step clip (0: off)").at_least(0);
  s.add("train.grad_clip", c.train.grad_clip, "global gradient-norm clip (0: off)").at_least(0);
  s.add("train.weight_decay", c.train.weight_decay, "adamw decoupled weight decay").at_least(0);
  s.add("train.batch_size", c.train.batch_size, "contiguous streams B").at_least(1);
  s.add("train.segment", c.train.segment, "segment length M").at_least(1);
  s.add("train.steps", c.train.steps, "optimizer steps (adamw decays to 0 over them)").at_least(1);
  s.add("train.max_minutes", c.train.max_minutes, "stop after this much wall time (0: no limit)").at_least(0);
  s.add("train.log_every", c.train.log_every, "steps between metrics.jsonl lines").at_least(1);
  s.add("train.eval_every", c.train.eval_every, "steps between validation evaluations").at_least(1);
  s.add("train.eval_blocks", c.train.eval_blocks, "validation blocks per evaluation during training (0: all)").at_least(0);
  s.add("train.checkpoint_every", c.train.checkpoint_every, "steps between checkpoints").at_least(1);
  s.add("eval.batch", c.eval.batch, "evaluation streams (the paper: 8)").at_least(1);
  s.add("eval.segment", c.eval.segment, "evaluation block length (0: train.segment)").at_least(0);
}

namespace {

CharTransformerConfig model_config(const CharlmSettings& c, int64_t vocab) {
  CharTransformerConfig m;
  m.vocab = vocab;
  m.layers = c.model.layers;
  m.ff_width = c.model.ff_width;
  m.pre_norm = c.model.pre_norm;
  m.adaptive_cache = c.model.adaptive_cache;
  m.cache_margin = c.model.cache_margin;
  auto& a = m.attention;
  a.width = c.model.width;
  a.heads = c.model.heads;
  a.max_span = c.model.max_span;
  auto key_values = [](const std::vector<std::string>& items, const std::string& key, const std::string& example) {
    std::map<std::string, std::string> options;
    for (const std::string& kv : items) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) fail("{}: '{}' is not key=value (e.g. {})", key, kv, example);
      options[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return options;
  };
  a.positional = c.model.positional;
  a.positional_options = key_values(c.model.positional_options, "model.positional_options", "buckets=32");
  a.attend_self = c.model.attend_self;
  a.span = c.model.span;
  a.span_options = key_values(c.model.span_options, "model.span_options", "bias_init=-4");
  a.span_ramp = c.model.span_ramp;
  a.span_init = c.model.span_init;
  a.span_loss = c.model.span_loss;
  a.trim = c.model.trim;
  a.trim_granularity = c.model.trim_granularity;
  a.path = attention_path_from_name(c.model.attention);
  a.dropout = c.model.dropout;
  return m;
}

struct Score {
  double loss = 0;  // nats per character
  double bpc = 0;
  int64_t tokens = 0;
};

// The full-eval protocol: `batch` contiguous streams, blocks of M with the cache carried from a
// zero cache, the final partial block skipped; the mean of the per-block mean NLL.
Score full_eval(CharTransformer& model, const Tensor& tokens, int64_t batch, int64_t segment, int64_t max_blocks,
                Device device, const std::string& what) {
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  TextStreams streams(tokens, batch, segment, what);
  const int64_t blocks = max_blocks > 0 ? std::min(max_blocks, streams.blocks()) : streams.blocks();
  LayerCache cache;
  Generator unused(0);
  double total = 0;
  for (int64_t k = 0; k < blocks; ++k) {
    const auto b = streams.block(k);
    total += cross_entropy(model.forward(b.input.to(device), cache, unused), b.target.to(device)).item();
  }
  model.train(was_training);
  Score s;
  s.loss = total / static_cast<double>(blocks);
  s.bpc = s.loss / std::log(2.0);
  s.tokens = blocks * batch * segment;
  return s;
}

std::unique_ptr<LRSchedule> make_schedule(const CharlmSettings& c) {
  if (c.train.optimizer == "adagrad") return std::make_unique<WarmupConstantLR>(c.train.lr, c.train.warmup);
  return std::make_unique<WarmupCosineLR>(c.train.lr, c.train.warmup, c.train.steps);
}

// The cache a step continues from travels in that step's checkpoint (TrainingPosition::
// tensor_files: cache.safetensors in the step folder, checksummed with it), so a missing or
// damaged cache makes --resume fall back to the checkpoint before, as any damaged file does.
constexpr const char* kCacheFile = "cache";

NamedTensors cache_tensors(const LayerCache& cache) {
  NamedTensors tensors;
  for (size_t l = 0; l < cache.layers.size(); ++l)
    if (cache.layers[l].defined()) tensors.emplace_back(fmt::format("layer.{}", l), cache.layers[l]);
  return tensors;
}

LayerCache cache_from_tensors(const NamedTensors& tensors, int64_t layers, Device device) {
  LayerCache cache;
  if (tensors.empty()) return cache;
  cache.layers.resize(static_cast<size_t>(layers));
  for (const auto& [name, tensor] : tensors) {
    const std::string prefix = "layer.";
    const int64_t l = name.rfind(prefix, 0) == 0 ? std::stoll(name.substr(prefix.size())) : -1;
    if (l < 0 || l >= layers) fail("resume: the checkpoint's cache holds '{}', not a layer of {}", name, layers);
    cache.layers[static_cast<size_t>(l)] = tensor.to(device);
  }
  return cache;
}

// Runs from before the cache joined the checkpoint kept it beside the step folders, in
// checkpoints/cache-<step>.safetensors (metadata: layers).
LayerCache load_cache_beside(const RunDir& run, int64_t step, Device device) {
  const auto path = run.checkpoint_path(fmt::format("cache-{:09d}.safetensors", step));
  if (!std::filesystem::exists(path)) fail("resume: the cache of step {} ({}) is missing", step, path.string());
  const auto contents = load_safetensors(path);
  LayerCache cache;
  cache.layers.resize(static_cast<size_t>(std::stoll(contents.metadata.at("layers"))));
  for (size_t l = 0; l < cache.layers.size(); ++l) {
    const std::string name = fmt::format("layer.{}", l);
    if (contents.contains(name)) cache.layers[l] = contents.at(name).to(device);
  }
  return cache;
}

// "<path> is not the text this run trained on (...)" when data.path's text differs from `then`;
// "" when it is the same.
std::string other_text(const CharlmSettings& c, const DataFingerprint& then) {
  const DataFingerprint now = read_fingerprint(c);
  if (now.same_text(then)) return "";
  return fmt::format("{} is not the text this run trained on ({}; the run recorded {} of {})",
                     resolve_data(c).string(), now.describe(), then.describe(), then.file);
}

void refuse_other_text(const CharlmSettings& c, const DataFingerprint& then) {
  if (const std::string why = other_text(c, then); !why.empty())
    fail("resume: {}: restore that file, or start a new run", why);
}

// A finished run, loaded for eval or sample.
struct LoadedRun {
  std::unique_ptr<CharTransformer> model;
  CharVocab vocab;                            // the one the model learned
  std::optional<DataFingerprint> trained_on;  // absent: an older run that did not record it
  Device device = kCPU;
};

// The run's settings (its config.yaml, then the job's own from the command line), its checkpoint's
// weights and the vocabulary the run trained on: the checkpoint's vocab_bytes, else vocab.json,
// else (a run older than both) rebuilt from the data file, with a warning.
LoadedRun load_run(CharlmSettings& c, Settings& settings, const JobSettings& job, const std::vector<std::string>& takes,
                   const std::string& job_name, const std::string& run_dir, const std::string& which) {
  load_run_settings(settings, run_dir);
  apply_job_settings(settings, job, takes, "charlm " + job_name);
  LoadedRun run;
  run.device = usable_device(c.device);
  const std::filesystem::path folder = run_checkpoint_folder(run_dir, which);
  const Checkpoint checkpoint = load_checkpoint(folder);
  const TrainedOn recorded = read_vocab(run_dir);
  const auto stored = std::find_if(checkpoint.model.begin(), checkpoint.model.end(),
                                   [](const auto& entry) { return entry.first == kVocabBuffer; });
  if (stored != checkpoint.model.end()) {
    run.vocab = vocab_from_tensor(stored->second);
  } else if (recorded.vocab) {
    run.vocab = *recorded.vocab;
  } else {
    const std::filesystem::path data = resolve_data(c);
    run.vocab = load_text(c).vocab;
    fmt::print(stderr,
               "charlm {}: warning: {} stores no vocabulary (a run from before vocab.json); it is rebuilt from {}, "
               "which gives the ids the model learned only if that file is unchanged since training\n",
               job_name, run_dir, data.string());
  }
  try {
    const nlohmann::json position = nlohmann::json::parse(checkpoint.extra_json).value("extra", nlohmann::json::object());
    if (position.contains(kDataKey)) run.trained_on = fingerprint_from_json(position.at(kDataKey));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: the checkpoint's training position is damaged: {}", folder.string(), e.what());
  }
  if (!run.trained_on) run.trained_on = recorded.data;
  Generator gen(static_cast<uint64_t>(c.seed));
  run.model = std::make_unique<CharTransformer>(model_config(c, run.vocab.size()), gen);
  if (stored != checkpoint.model.end()) run.model->register_buffer(kVocabBuffer, vocab_tensor(run.vocab));
  run.model->load_state_dict(checkpoint.model);
  run.model->to(run.device);
  run.model->eval();
  return run;
}

}  // namespace

// Data parallel under mpirun/srun (apps/common/data_parallel.h): the B streams are cut into
// contiguous groups of B/p rows, one per rank (each rank keeps its rows' cache); the gradients
// are averaged before each step; a checkpoint holds the cache of all B rows (gathered), so a run
// resumes with any rank count that divides B; rank 0 alone validates and writes the run folder.
void train(const CharlmSettings& c, const Settings& settings, const TrainRequest& request) {
  const AutocastBf16 autocast(c.train.autocast == "bf16");  // matmuls of training and evaluation
  DataParallel dp(usable_device(c.device));
  const Device device = dp.device();
  const distributed::Shard rows = dp.shard(c.train.batch_size, "train.batch_size");  // this rank's streams
  const auto seed = dp.seed(static_cast<uint64_t>(c.seed));
  // A resumed run reads the text it trained on, with the vocabulary it learned (vocab.json).
  TrainedOn trained_on;
  if (request.resume) {
    trained_on = read_vocab(request.out_dir);
    if (trained_on.data) refuse_other_text(c, *trained_on.data);
    if (!trained_on.vocab)
      fmt::print(stderr, "charlm: warning: {} has no vocab.json (an older run); the vocabulary is rebuilt from {}\n",
                 request.out_dir.string(), resolve_data(c).string());
  }
  const TextData data = load_text(c, trained_on.vocab ? &*trained_on.vocab : nullptr);
  const int64_t eval_segment = c.eval.segment > 0 ? c.eval.segment : c.train.segment;
  TextStreams streams(data.train, c.train.batch_size, c.train.segment, "the training split of " + data.name);
  // Checked before any work: the validation split must hold one evaluation block per stream.
  TextStreams(data.val, c.eval.batch, eval_segment, "the validation split of " + data.name);

  Generator gen(seed);
  CharTransformer model(model_config(c, data.vocab.size()), gen);
  // The vocabulary travels inside every checkpoint (a buffer: saved, never trained).
  model.register_buffer(kVocabBuffer, vocab_tensor(data.vocab));
  model.to(device);
  dp.replicate(model);
  auto opt = make_optimizer({.kind = c.train.optimizer, .lr = c.train.lr, .weight_decay = c.train.weight_decay, .clip_per_tensor = c.train.clip},
                            model.parameters());
  const auto schedule = make_schedule(c);

  RunDir run = dp.open_run_dir(request, settings, dp.describe(c.train.batch_size, 1, c.train.lr));
  if (!request.resume) write_vocab(run, data, c.data.bytes);
  RunCheckpoints checkpoints(run, model, *opt, gen, {.metric = "val_loss", .higher_is_better = false});
  TrainingPosition at;
  LayerCache cache;
  std::vector<double> loss_steps, losses, val_steps, val_losses, span_steps;
  std::vector<std::vector<std::vector<double>>> span_history;  // [log][layer][head]
  auto remember = [&](const nlohmann::json& r) {
    if (r.contains("loss")) {
      loss_steps.push_back(r.at("step").get<double>());
      losses.push_back(r.at("loss").get<double>());
    }
    if (r.contains("val_loss") && r.at("val_loss").is_number()) {
      val_steps.push_back(r.at("step").get<double>());
      val_losses.push_back(r.at("val_loss").get<double>());
    }
    if (r.contains("head_spans")) {
      span_steps.push_back(r.at("step").get<double>());
      span_history.push_back(r.at("head_spans").get<std::vector<std::vector<double>>>());
    }
  };
  if (request.resume) {
    at = dp.restore(checkpoints);
    run.drop_metrics_after(at.step);
    if (dp.writes())
      for (const auto& r : run.read_metrics()) remember(r);
    // The checkpoint's own record of the text and the vocabulary (vocab.json may be missing).
    if (at.extra.contains(kDataKey)) refuse_other_text(c, fingerprint_from_json(at.extra.at(kDataKey)));
    else if (!trained_on.data)
      fmt::print(stderr, "charlm: warning: {} does not record the data file it trained on (an older run); {} cannot "
                 "be checked against it\n", request.out_dir.string(), data.path.string());
    for (const auto& [name, buffer] : model.named_buffers())
      if (name == kVocabBuffer && vocab_from_tensor(buffer.value()).symbols() != data.vocab.symbols())
        fail("resume: the checkpoint's vocabulary ({} characters) is not the one {} (vocab.json or the data file) "
             "gives ({} characters)", vocab_from_tensor(buffer.value()).size(), request.out_dir.string(),
             data.vocab.size());
    streams.set_position(at.extra.at("stream_position").get<int64_t>());
    const auto kept = at.tensor_files.find(kCacheFile);
    cache = kept != at.tensor_files.end() ? cache_from_tensors(kept->second, model.num_layers(), device)
                                          : load_cache_beside(run, at.step, device);
    for (Tensor& layer : cache.layers)  // [B, ...] of the checkpoint -> this rank's rows
      if (layer.defined()) layer = layer.narrow(0, rows.first, rows.count).contiguous();
  }
  double window_loss = at.extra.value("window_loss", 0.0);
  int64_t window_steps = at.extra.value("window_steps", int64_t{0});
  double train_seconds = at.extra.value("train_seconds", 0.0);
  fmt::print("charlm: {} parameters, vocabulary {}, {} train / {} validation characters of {}; steps {}..{} of {} x {} "
             "on {}; run folder {}\n",
             model.num_parameters(), data.vocab.size(), data.train.numel(), data.val.numel(), data.name, at.step,
             c.train.steps, c.train.batch_size, c.train.segment, device.str(), run.path().string());

  const auto started = std::chrono::steady_clock::now();
  const double start_seconds = train_seconds;
  auto elapsed = [&] {
    return start_seconds + std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  Progress progress(c.train.steps, "train");
  progress.start_at(at.step);  // updates come every train.log_every steps
  bool out_of_time = false;
  while (at.step < c.train.steps && !out_of_time) {
    const auto segment = streams.next(gen);
    if (segment.restarted) cache = LayerCache{};
    opt->set_lr(schedule->lr_at(at.step));
    const Tensor input = segment.input.narrow(0, rows.first, rows.count).contiguous();    // [B/p, M]
    const Tensor target = segment.target.narrow(0, rows.first, rows.count).contiguous();  // [B/p, M]
    // Dropout masks: the single process's masks of this rank's rows (nn/mask_rows.h).
    const MaskRowsScope mask_rows({.first = rows.first, .count = rows.count, .global = c.train.batch_size});
    Variable logits = model.forward(input.to(device), cache, gen);
    Variable nll = cross_entropy(logits, target.to(device));
    Variable span = model.span_loss();
    Variable loss = span.defined() ? nll + span : nll;
    const double value = nll.item();
    check_finite_loss(loss.item(), at.step + 1, checkpoints.latest_path());
    opt->zero_grad();
    dp.overlap_next_backward();
    loss.backward();
    dp.average_gradients();
    check_finite_gradients(model, at.step + 1, checkpoints.latest_path());
    if (c.train.grad_clip > 0) clip_grad_norm_(model.parameters(), c.train.grad_clip);
    opt->step();
    model.clamp_spans();
    ++at.step;
    window_loss += dp.mean(value);  // the loss of the whole batch
    ++window_steps;
    // Every rank stops at the same step: when any rank's clock says so.
    out_of_time = c.train.max_minutes > 0 && dp.sum(elapsed() >= 60.0 * c.train.max_minutes ? 1 : 0) > 0;
    const bool last = at.step == c.train.steps || out_of_time;
    const bool log_now = at.step % c.train.log_every == 0 || last;
    const bool eval_now = log_now && (at.step % c.train.eval_every == 0 || last);
    std::optional<double> evaluated;  // this step's validation loss

    if (log_now && dp.writes()) {
      const double mean_loss = window_loss / static_cast<double>(window_steps);
      nlohmann::json record{{"step", at.step},
                            {"loss", mean_loss},
                            {"bpc", mean_loss / std::log(2.0)},
                            {"lr", opt->lr()},
                            {"span_avg", model.average_span()},
                            {"span_max", model.largest_span()},
                            {"attn_flops_share", model.attention_flops_share(c.train.segment)},
                            {"train_seconds", elapsed()},
                            {"head_spans", model.head_spans()}};
      if (eval_now) {
        const Score v = full_eval(model, data.val, c.eval.batch, eval_segment, c.train.eval_blocks, device,
                                  "the validation split of " + data.name);
        record["val_loss"] = v.loss;
        record["val_bpc"] = v.bpc;
        record["val_tokens"] = v.tokens;
        evaluated = v.loss;
        progress.print(fmt::format("step {}: val_loss {:.4f} nats ({:.4f} bpc), span avg {:.0f} max {:.0f}, {:.0f} s",
                                   at.step, v.loss, v.bpc, model.average_span(), model.largest_span(), elapsed()));
      }
      run.log_metrics(record);
      remember(record);
      progress.update(at.step, {{"loss", mean_loss}, {"span_avg", model.average_span()}});
    }
    if (log_now) {
      window_loss = 0;
      window_steps = 0;
    }
    // Where the run stands, for a checkpoint of this step (the latest, or the best: either may
    // be the one a resume falls back to).
    const bool save = at.step % c.train.checkpoint_every == 0 || last;
    if (save || eval_now) {
      at.extra = nlohmann::json::object({{"window_loss", window_loss},
                                         {"window_steps", window_steps},
                                         {"stream_position", streams.position()},
                                         {"train_seconds", elapsed()},
                                         {kDataKey, to_json(data.data)}});
      LayerCache all_rows = cache;  // every rank's rows, [B, ...] per layer
      for (Tensor& layer : all_rows.layers)
        if (layer.defined()) layer = dp.gather_rows(layer);
      at.tensor_files = {{kCacheFile, cache_tensors(all_rows)}};
    }
    if (evaluated) checkpoints.offer_best(at, *evaluated);
    if (save) checkpoints.save(at);
  }
  progress.finish();
  train_seconds = elapsed();
  if (!dp.writes()) return;

  // The final numbers: the full validation split with the final weights.
  const Score final_val = full_eval(model, data.val, c.eval.batch, eval_segment, 0, device,
                                    "the validation split of " + data.name);
  draw_span_mask(model, run.figure_path("span_mask"));
  draw_span_history(span_steps, span_history, run.figure_path("spans"));
  draw_learning_curves(loss_steps, losses, val_steps, val_losses, run.figure_path("learning_curves"));
  run.log_figures(at.step);
  nlohmann::json summary{{"val_loss", final_val.loss},
                         {"val_bpc", final_val.bpc},
                         {"val_tokens", final_val.tokens},
                         {"best_val_loss", checkpoints.best_value().value_or(NAN)},
                         {"steps", at.step},
                         {"steps_planned", c.train.steps},
                         {"train_tokens", at.step * c.train.batch_size * c.train.segment},
                         {"stopped_by_time_limit", out_of_time},
                         {"train_seconds", train_seconds},
                         {"final_train_loss", losses.empty() ? NAN : losses.back()},
                         {"span_avg", model.average_span()},
                         {"span_max", model.largest_span()},
                         {"head_spans", model.head_spans()},
                         {"attn_flops_share", model.attention_flops_share(c.train.segment)},
                         {"flops_per_token", model.flops_per_token()},
                         {"parameters", model.num_parameters()},
                         {"vocabulary", data.vocab.size()},
                         {"device", device.str()},
                         {"data_parallel", dp.summary()}};
  run.write_summary(summary);
  fmt::print("val_loss {:.4f} nats/char ({:.4f} bpc) after {} steps, {:.1f} s of training; span avg {:.0f} max {:.0f}\n",
             final_val.loss, final_val.bpc, at.step, train_seconds, model.average_span(), model.largest_span());
  fmt::print("summary: {}\n", run.summary_path().string());
}

// The settings eval and sample take from the command line; the rest come from the run.
const std::vector<std::string> kEvalTakes{"device", "data.path", "data.data_dir", "eval.", "model.attention", "model.trim"};
const std::vector<std::string> kSampleTakes{"device", "model.attention"};

void evaluate_run(CharlmSettings& c, Settings& settings, const JobSettings& job, const std::string& run_dir,
                  const std::string& which, const std::string& file) {
  const LoadedRun run = load_run(c, settings, job, kEvalTakes, "eval", run_dir, which);
  const int64_t segment = c.eval.segment > 0 ? c.eval.segment : c.train.segment;
  Tensor tokens;
  std::string what;
  if (file.empty()) {
    if (!run.trained_on)
      fmt::print(stderr, "charlm eval: warning: {} does not record the data file it trained on (an older run); "
                 "{} cannot be checked against it\n", run_dir, resolve_data(c).string());
    else if (const std::string why = other_text(c, *run.trained_on); !why.empty())
      fmt::print(stderr, "charlm eval: warning: {}; scoring its validation split with the run's vocabulary\n", why);
    const TextData data = load_validation(c, run.vocab);
    tokens = data.val;
    what = "the validation split of " + data.name;
  } else {
    const CharCorpus corpus = CharCorpus::load(file, 1.0);
    what = file;
    tokens = encode_checked(run.vocab, corpus.text(TextSplit::Train), file);
  }
  const Score s = full_eval(*run.model, tokens, c.eval.batch, segment, 0, run.device, what);
  fmt::print("{} checkpoint of {} on {}: loss {:.4f} nats/char, {:.4f} bpc ({} characters scored in {} streams of "
             "blocks of {})\n",
             which, run_dir, what, s.loss, s.bpc, s.tokens, c.eval.batch, segment);
}

void sample_run(CharlmSettings& c, Settings& settings, const JobSettings& job, const SampleRequest& request) {
  if (!request.figure.empty() && request.tokens < 2)
    fail("sample --figure needs --tokens 2 or more: the figure shows the attention of each generated character fed "
         "back to the model, and the last one never is (--tokens {})", request.tokens);
  const LoadedRun run = load_run(c, settings, job, kSampleTakes, "sample", request.run_dir, request.which);
  CharTransformer* model = run.model.get();
  const CharVocab& vocab = run.vocab;
  const Device device = run.device;
  if (request.prompt.empty()) fail("sample: the prompt is empty; give at least one character (e.g. --prompt $'\\n')");
  const Tensor prompt = encode_checked(vocab, request.prompt, "the prompt");
  NoGradGuard no_grad;
  Generator unused(0), gen(static_cast<uint64_t>(request.seed));
  DecodeCache cache;
  const int64_t P = prompt.numel(), V = vocab.size();
  // The prompt in one call, then one token per call with every layer's keys/values cached: a new
  // token projects only itself and attends over W_l keys per layer (O(window), not O(context)).
  Tensor logits = model->forward_incremental(prompt.reshape({1, P}).to(device), cache, unused).value().to(kCPU);
  std::vector<double> last = logits.narrow(1, P - 1, 1).reshape({V}).to_vector<double>();
  // The text goes out as it is generated (the prompt, then each character, flushed), so a sample
  // stopped early keeps what it wrote.
  std::fwrite(request.prompt.data(), 1, request.prompt.size(), stdout);
  std::fflush(stdout);
  std::vector<size_t> order(static_cast<size_t>(V));
  // For --figure: each layer's attention at every generation step (kept for the last 40 steps).
  const bool draw = !request.figure.empty();
  const int64_t shown = 40;
  std::vector<std::string> queries;
  std::vector<std::vector<std::vector<float>>> attention;
  auto label = [](uint8_t b) { return b == '\n' ? std::string("\\n") : b == ' ' ? std::string("' '") : std::string(1, static_cast<char>(b)); };
  for (int64_t t = 0; t < request.tokens; ++t) {
    std::iota(order.begin(), order.end(), size_t{0});
    const size_t k = request.top_k > 0 ? std::min<size_t>(static_cast<size_t>(request.top_k), order.size()) : order.size();
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](size_t a, size_t b) { return last[a] > last[b] || (last[a] == last[b] && a < b); });
    std::vector<double> weights(k);
    const double top = last[order[0]];
    double total = 0;
    for (size_t i = 0; i < k; ++i) total += weights[i] = std::exp((last[order[i]] - top) / request.temperature);
    double u = gen.next_uniform() * total;
    size_t pick = k - 1;
    for (size_t i = 0; i < k; ++i) {
      if (u < weights[i]) {
        pick = i;
        break;
      }
      u -= weights[i];
    }
    const auto id = static_cast<int64_t>(order[pick]);
    std::fputc(vocab.symbol(id), stdout);
    std::fflush(stdout);
    if (t + 1 == request.tokens) break;
    logits = model->forward_incremental(Tensor::from_vector(std::vector<int64_t>{id}, {1, 1}).to(device), cache, unused)
                 .value()
                 .to(kCPU);
    last = logits.reshape({V}).to_vector<double>();
    if (draw && request.tokens - t <= shown + 1) {
      queries.push_back(label(vocab.symbol(id)));
      std::vector<std::vector<float>> layers;
      for (int64_t l = 0; l < model->num_layers(); ++l)
        layers.push_back(model->layer(l).window_probs().to(kCPU).to_vector<float>());  // [1, H, 1, W]
      attention.push_back(std::move(layers));
    }
  }
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (draw) {
    if (model->config().attention.attend_self)
      fail("sample --figure: the figure reads distances 1..W; this run attends to the current token too");
    // Each layer's window (fixed while sampling: the parameters do not change).
    std::vector<int64_t> windows;
    for (int64_t l = 0; l < model->num_layers(); ++l) windows.push_back(model->layer(l).window());
    draw_passage_attention(queries, attention, model->config().attention.heads, windows, 64, request.figure);
    fmt::print(stderr, "figure: {}\n", request.figure);
  }
}

const std::vector<std::string> kSpansTakes{"device", "data.path", "data.data_dir", "model.attention"};

void span_text_run(CharlmSettings& c, Settings& settings, const JobSettings& job, const SpanTextRequest& request) {
  const LoadedRun run = load_run(c, settings, job, kSpansTakes, "spans", request.run_dir, request.which);
  CharTransformer& model = *run.model;
  if (model.config().attention.span != "dynamic_span")
    fail("spans: {} has model.span = {}, not dynamic_span: its spans do not change along a text (its figures/span_mask.png "
         "shows them)", request.run_dir, model.config().attention.span);
  Tensor tokens;  // int64 [N]
  std::string what;
  if (!request.text.empty()) {
    tokens = encode_checked(run.vocab, request.text, "--text");
    what = "the given text";
  } else {
    const TextData data = load_validation(c, run.vocab);
    if (request.offset + request.chars > data.val.numel())
      fail("spans: --offset {} + --chars {} is past the end of the validation split of {} ({} characters)", request.offset,
           request.chars, data.name, data.val.numel());
    tokens = data.val.narrow(0, request.offset, request.chars).contiguous();
    what = fmt::format("{} characters of the validation split of {} from offset {}", request.chars, data.name, request.offset);
  }
  const std::vector<int64_t> ids = tokens.to_vector<int64_t>();
  const auto N = static_cast<int64_t>(ids.size()), M = c.train.segment, L = model.num_layers();
  NoGradGuard no_grad;
  model.eval();
  LayerCache cache;
  Generator unused(0);
  std::vector<std::vector<double>> z(static_cast<size_t>(L));  // [layer][t]: z_t averaged over the heads
  for (int64_t start = 0; start < N; start += M) {
    const int64_t m = std::min(M, N - start);
    model.forward(tokens.narrow(0, start, m).reshape({1, m}).to(run.device), cache, unused);
    for (int64_t l = 0; l < L; ++l) {
      // [B, H, M] -> [M]: z_t of each character, averaged over the heads (B = 1).
      const std::vector<double> zt = mean(model.layer(l).dynamic_spans(), {0, 1}).to(kCPU).to_vector<double>();
      z[static_cast<size_t>(l)].insert(z[static_cast<size_t>(l)].end(), zt.begin(), zt.end());
    }
  }
  std::vector<double> mean_z(static_cast<size_t>(N), 0.0);
  for (const auto& layer : z)
    for (int64_t t = 0; t < N; ++t) mean_z[static_cast<size_t>(t)] += layer[static_cast<size_t>(t)] / static_cast<double>(L);
  // The paper: the span rises at the start of words. z_t is the span used to predict character
  // t + 1, so a word start is predicted from a space or newline followed by a letter.
  std::string text;
  for (int64_t id : ids) text += static_cast<char>(run.vocab.symbol(id));
  double before_word = 0, elsewhere = 0;
  int64_t starts = 0;
  for (int64_t t = 0; t < N; ++t) {
    const auto i = static_cast<size_t>(t);
    const bool start = t + 1 < N && (text[i] == ' ' || text[i] == '\n') && std::isalpha(static_cast<unsigned char>(text[i + 1]));
    (start ? before_word : elsewhere) += mean_z[i];
    starts += start;
  }
  std::vector<std::string> layer_means;
  for (const auto& layer : z)
    layer_means.push_back(fmt::format("{:.3f}", std::accumulate(layer.begin(), layer.end(), 0.0) / static_cast<double>(N)));
  fmt::print("spans of {} ({} checkpoint) on {}: mean z_t {:.3f} characters (per layer: {}); predicting the first "
             "letter of a word {} (n = {}), elsewhere {} (n = {})\n",
             request.run_dir, request.which, what, std::accumulate(mean_z.begin(), mean_z.end(), 0.0) / static_cast<double>(N),
             fmt::join(layer_means, ", "), starts ? fmt::format("{:.3f}", before_word / static_cast<double>(starts)) : "-", starts,
             N > starts ? fmt::format("{:.3f}", elsewhere / static_cast<double>(N - starts)) : "-", N - starts);
  if (!request.figure.empty()) {
    draw_text_spans(text, z, mean_z, model.config().attention.span_ramp, request.figure);
    fmt::print(stderr, "figure: {}\n", request.figure);
  }
}

}  // namespace posgrad::charlm
