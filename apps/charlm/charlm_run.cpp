// The charlm jobs (see charlm_run.h and main.cpp).
// Shapes: letters of shape_legend.h.
#include "apps/charlm/charlm_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <numeric>

#include <nlohmann/json.hpp>

#include "apps/charlm/charlm_figures.h"
#include "apps/common/finite_guard.h"
#include "apps/common/progress.h"
#include "apps/common/run_checkpoints.h"
#include "apps/common/run_dir.h"
#include "attention/lm/char_transformer.h"
#include "datasets/char_corpus.h"
#include "datasets/data_dir.h"
#include "datasets/text_streams.h"
#include "nn/adagrad.h"
#include "nn/adam.h"
#include "nn/atomic_file.h"
#include "nn/checkpoint.h"
#include "nn/clip_grad.h"
#include "nn/losses.h"
#include "nn/lr_schedule.h"
#include "nn/safetensors.h"
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
  s.add("model.position", c.model.position, "positional scheme").choices({"key_pe", "transformer_xl", "rope", "alibi", "none"});
  s.add("model.attend_self", c.model.attend_self, "also attend to the current token (distance 0; not with key_pe)");
  s.add("model.max_span", c.model.max_span, "maximum span S (the attention window without adaptive span)").at_least(1);
  s.add("model.adaptive_span", c.model.adaptive_span, "learn each head's span (soft mask, span loss, clamp)");
  s.add("model.span_ramp", c.model.span_ramp, "ramp length R of the soft mask").above(0);
  s.add("model.span_init", c.model.span_init, "initial c = z / S").at_least(0).at_most(1);
  s.add("model.span_loss", c.model.span_loss, "span loss coefficient lambda").at_least(0);
  s.add("model.trim", c.model.trim, "cut keys to the layer's longest span + ramp (never changes numbers)");
  s.add("model.trim_granularity", c.model.trim_granularity, "trim in steps of this many keys").at_least(1);
  s.add("model.fused", c.model.fused,
        "attention on the fused path: each query visits only its window's keys (same numbers as the dense reference)");
  s.add("model.adaptive_cache", c.model.adaptive_cache, "cache the window + cache_margin inputs (else S)");
  s.add("model.cache_margin", c.model.cache_margin, "extra cached inputs in case a span grows").at_least(0);
  s.add("train.optimizer", c.train.optimizer, "optimizer").choices({"adagrad", "adamw"});
  s.add("train.lr", c.train.lr, "peak learning rate").above(0);
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

Device parse_device(const std::string& name) {
  const Device device = Device::parse(name);
  if (!device.is_cpu()) require_device(device);
  return device;
}

std::filesystem::path resolve_data(const CharlmSettings& c) {
  const std::filesystem::path p(c.data.path);
  if (p.is_absolute() || std::filesystem::exists(p)) return p;
  return find_data_dir(c.data.data_dir) / p;
}

CharVocab make_vocab(const CharlmSettings& c, const std::string& train_text) {
  if (!c.data.bytes) return CharVocab::from_text(train_text);
  std::string all(256, '\0');
  for (int i = 0; i < 256; ++i) all[static_cast<size_t>(i)] = static_cast<char>(i);
  return CharVocab::from_text(all);
}

// A byte as a reader sees it: 'a', '\n', 0xC3.
std::string describe_byte(uint8_t b) {
  if (b == '\n') return "'\\n'";
  if (b == '\t') return "'\\t'";
  if (b >= 32 && b < 127) return fmt::format("'{}'", static_cast<char>(b));
  return fmt::format("byte 0x{:02X}", b);
}

Tensor encode_checked(const CharVocab& vocab, const std::string& text, const std::string& what) {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<uint8_t>(text[i]);
    if (!vocab.contains(b))
      fail("{}: character {} at offset {} is not in the vocabulary of {} characters (built from the training split; "
           "data.bytes: true accepts any byte)",
           what, describe_byte(b), i, vocab.size());
    ids.push_back(vocab.id(b));
  }
  return Tensor::from_vector(ids, {static_cast<int64_t>(ids.size())});
}

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
  a.position = segment_position_from_name(c.model.position);
  a.attend_self = c.model.attend_self;
  a.adaptive_span = c.model.adaptive_span;
  a.span_ramp = c.model.span_ramp;
  a.span_init = c.model.span_init;
  a.span_loss = c.model.span_loss;
  a.trim = c.model.trim;
  a.trim_granularity = c.model.trim_granularity;
  a.fused = c.model.fused;
  a.dropout = c.model.dropout;
  return m;
}

// The text of a run: the vocabulary (from the training split, or all bytes) and both splits.
struct TextData {
  CharVocab vocab;
  Tensor train, val;  // int64 [L]
  std::string name;
};

TextData load_text(const CharlmSettings& c) {
  const std::filesystem::path path = resolve_data(c);
  const CharCorpus corpus = CharCorpus::load(path, c.data.train_fraction);
  TextData d;
  d.name = path.filename().string();
  const std::string train_text = corpus.text(TextSplit::Train);
  std::string val_text = corpus.text(TextSplit::Val);
  if (c.data.val_fraction > 0)  // e.g. enwik8/text8: 90M train, the next 5M dev, the last 5M test
    val_text.resize(std::min(val_text.size(), static_cast<size_t>(c.data.val_fraction * static_cast<double>(corpus.size()))));
  if (train_text.size() < 2)
    fail("{}: the training split has {} character(s); a language model needs at least 2 (the file has {} bytes)",
         path.string(), train_text.size(), corpus.size());
  d.vocab = make_vocab(c, train_text);
  d.train = encode_checked(d.vocab, train_text, fmt::format("the training split of {}", path.string()));
  d.val = encode_checked(d.vocab, val_text, fmt::format("the validation split of {}", path.string()));
  return d;
}

void write_vocab(RunDir& run, const CharVocab& vocab, bool bytes) {
  nlohmann::json j{{"bytes", std::vector<int>(vocab.symbols().begin(), vocab.symbols().end())}, {"byte_mode", bytes}};
  run.write_text("vocab.json", j.dump() + "\n");
}

// The checkpointed copy of the vocabulary: the bytes in id order, int64 [V].
constexpr const char* kVocabBuffer = "vocab_bytes";
Tensor vocab_tensor(const CharVocab& vocab) {
  return Tensor::from_vector(std::vector<int64_t>(vocab.symbols().begin(), vocab.symbols().end()), {vocab.size()});
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

std::unique_ptr<Optimizer> make_optimizer(const CharlmSettings& c, std::vector<Variable> params) {
  if (c.train.optimizer == "adagrad") {
    AdagradOptions o;
    o.lr = c.train.lr;
    o.clip_per_tensor = c.train.clip;
    return std::make_unique<Adagrad>(std::move(params), o);
  }
  AdamWOptions o;
  o.lr = c.train.lr;
  o.weight_decay = c.train.weight_decay;
  return std::make_unique<AdamW>(std::move(params), o);
}

std::unique_ptr<LRSchedule> make_schedule(const CharlmSettings& c) {
  if (c.train.optimizer == "adagrad") return std::make_unique<WarmupConstantLR>(c.train.lr, c.train.warmup);
  return std::make_unique<WarmupCosineLR>(c.train.lr, c.train.warmup, c.train.steps);
}

// The cache travels beside each checkpoint (checkpoints/cache-<step>.safetensors) so that a
// resumed run continues with the same context; only the two newest are kept.
std::filesystem::path cache_file(const RunDir& run, int64_t step) {
  return run.checkpoint_path(fmt::format("cache-{:09d}.safetensors", step));
}

void save_cache(const RunDir& run, const LayerCache& cache, int64_t step) {
  NamedTensors tensors;
  for (size_t l = 0; l < cache.layers.size(); ++l)
    if (cache.layers[l].defined()) tensors.emplace_back(fmt::format("layer.{}", l), cache.layers[l]);
  save_safetensors(cache_file(run, step), tensors, {{"layers", std::to_string(cache.layers.size())}});
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(run.path() / "checkpoints"))
    if (e.path().filename().string().rfind("cache-", 0) == 0) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (size_t i = 0; i + 2 < files.size(); ++i) std::filesystem::remove(files[i]);
}

LayerCache load_cache(const RunDir& run, int64_t step, Device device) {
  const auto path = cache_file(run, step);
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

std::filesystem::path checkpoint_folder(const std::filesystem::path& run_dir, const std::string& which) {
  const std::filesystem::path pointer = run_dir / "checkpoints" / which;
  if (!std::filesystem::exists(pointer))
    fail("{}: no '{}' checkpoint (is it a charlm run folder, and did it save one?)", run_dir.string(), which);
  std::string folder = read_file_bytes(pointer);
  while (!folder.empty() && (folder.back() == '\n' || folder.back() == '\r')) folder.pop_back();
  return pointer.parent_path() / folder;
}

// A model with the weights of a finished run; the vocabulary comes from the checkpoint itself.
std::unique_ptr<CharTransformer> load_model(CharlmSettings& c, Settings& settings, const std::string& run_dir,
                                            const std::string& which, CharVocab& vocab, Device& device) {
  load_run_settings(settings, run_dir);
  device = parse_device(c.device);
  const std::filesystem::path folder = checkpoint_folder(run_dir, which);
  const Checkpoint checkpoint = load_checkpoint(folder);
  const auto stored = std::find_if(checkpoint.model.begin(), checkpoint.model.end(),
                                   [](const auto& entry) { return entry.first == kVocabBuffer; });
  if (stored == checkpoint.model.end()) fail("{}: the checkpoint holds no '{}'", folder.string(), kVocabBuffer);
  std::string symbols;
  for (int64_t b : stored->second.to_vector<int64_t>()) symbols.push_back(static_cast<char>(b));
  vocab = CharVocab::from_text(symbols);
  Generator gen(static_cast<uint64_t>(c.seed));
  auto model = std::make_unique<CharTransformer>(model_config(c, vocab.size()), gen);
  model->register_buffer(kVocabBuffer, vocab_tensor(vocab));
  model->load_state_dict(checkpoint.model);
  model->to(device);
  model->eval();
  return model;
}

}  // namespace

void train(const CharlmSettings& c, const Settings& settings, const TrainRequest& request) {
  const auto seed = static_cast<uint64_t>(c.seed);
  const Device device = parse_device(c.device);
  const TextData data = load_text(c);
  const int64_t eval_segment = c.eval.segment > 0 ? c.eval.segment : c.train.segment;
  TextStreams streams(data.train, c.train.batch_size, c.train.segment, "the training split of " + data.name);
  // Checked before any work: the validation split must hold one evaluation block per stream.
  TextStreams(data.val, c.eval.batch, eval_segment, "the validation split of " + data.name);

  Generator gen(seed);
  CharTransformer model(model_config(c, data.vocab.size()), gen);
  // The vocabulary travels inside every checkpoint (a buffer: saved, never trained).
  model.register_buffer(kVocabBuffer, vocab_tensor(data.vocab));
  model.to(device);
  auto opt = make_optimizer(c, model.parameters());
  const auto schedule = make_schedule(c);

  RunDir run = open_run_dir(request, settings);
  write_vocab(run, data.vocab, c.data.bytes);
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
    at = checkpoints.restore_latest();
    run.drop_metrics_after(at.step);
    for (const auto& r : run.read_metrics()) remember(r);
    streams.set_position(at.extra.at("stream_position").get<int64_t>());
    cache = load_cache(run, at.step, device);
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
  bool out_of_time = false;
  while (at.step < c.train.steps && !out_of_time) {
    const auto segment = streams.next(gen);
    if (segment.restarted) cache = LayerCache{};
    opt->set_lr(schedule->lr_at(at.step));
    Variable logits = model.forward(segment.input.to(device), cache, gen);
    Variable nll = cross_entropy(logits, segment.target.to(device));
    Variable span = model.span_loss();
    Variable loss = span.defined() ? nll + span : nll;
    const double value = nll.item();
    check_finite_loss(loss.item(), at.step + 1, checkpoints.latest_path());
    opt->zero_grad();
    loss.backward();
    check_finite_gradients(model, at.step + 1, checkpoints.latest_path());
    if (c.train.grad_clip > 0) clip_grad_norm_(model.parameters(), c.train.grad_clip);
    opt->step();
    model.clamp_spans();
    ++at.step;
    window_loss += value;
    ++window_steps;
    out_of_time = c.train.max_minutes > 0 && elapsed() >= 60.0 * c.train.max_minutes;
    const bool last = at.step == c.train.steps || out_of_time;

    if (at.step % c.train.log_every == 0 || last) {
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
      if (at.step % c.train.eval_every == 0 || last) {
        const Score v = full_eval(model, data.val, c.eval.batch, eval_segment, c.train.eval_blocks, device,
                                  "the validation split of " + data.name);
        record["val_loss"] = v.loss;
        record["val_bpc"] = v.bpc;
        record["val_tokens"] = v.tokens;
        checkpoints.offer_best(at, v.loss);
        progress.print(fmt::format("step {}: val_loss {:.4f} nats ({:.4f} bpc), span avg {:.0f} max {:.0f}, {:.0f} s",
                                   at.step, v.loss, v.bpc, model.average_span(), model.largest_span(), elapsed()));
      }
      run.log_metrics(record);
      remember(record);
      progress.update(at.step, {{"loss", mean_loss}, {"span_avg", model.average_span()}});
      window_loss = 0;
      window_steps = 0;
    }
    if (at.step % c.train.checkpoint_every == 0 || last) {
      at.extra = nlohmann::json::object({{"window_loss", window_loss},
                                         {"window_steps", window_steps},
                                         {"stream_position", streams.position()},
                                         {"train_seconds", elapsed()}});
      save_cache(run, cache, at.step);
      checkpoints.save(at);
    }
  }
  progress.finish();
  train_seconds = elapsed();

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
                         {"parameters", model.num_parameters()},
                         {"vocabulary", data.vocab.size()},
                         {"device", device.str()}};
  run.write_summary(summary);
  fmt::print("val_loss {:.4f} nats/char ({:.4f} bpc) after {} steps, {:.1f} s of training; span avg {:.0f} max {:.0f}\n",
             final_val.loss, final_val.bpc, at.step, train_seconds, model.average_span(), model.largest_span());
  fmt::print("summary: {}\n", run.summary_path().string());
}

void evaluate_run(CharlmSettings& c, Settings& settings, const std::string& run_dir, const std::string& which,
                  const std::string& file) {
  CharVocab vocab;
  Device device = kCPU;
  auto model = load_model(c, settings, run_dir, which, vocab, device);
  const int64_t segment = c.eval.segment > 0 ? c.eval.segment : c.train.segment;
  Tensor tokens;
  std::string what;
  if (file.empty()) {
    const TextData data = load_text(c);
    tokens = data.val;
    what = "the validation split of " + data.name;
  } else {
    const CharCorpus corpus = CharCorpus::load(file, 1.0);
    what = file;
    tokens = encode_checked(vocab, corpus.text(TextSplit::Train), file);
  }
  const Score s = full_eval(*model, tokens, c.eval.batch, segment, 0, device, what);
  fmt::print("{} checkpoint of {} on {}: loss {:.4f} nats/char, {:.4f} bpc ({} characters scored in {} streams of "
             "blocks of {})\n",
             which, run_dir, what, s.loss, s.bpc, s.tokens, c.eval.batch, segment);
}

void sample_run(CharlmSettings& c, Settings& settings, const SampleRequest& request) {
  CharVocab vocab;
  Device device = kCPU;
  auto model = load_model(c, settings, request.run_dir, request.which, vocab, device);
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
  std::vector<int64_t> out;
  std::vector<size_t> order(static_cast<size_t>(V));
  // For --figure: each layer's attention at every generation step (kept for the last 40 steps).
  const bool draw = !request.figure.empty();
  const int64_t shown = 40;
  std::vector<std::string> queries;
  std::vector<std::vector<std::vector<float>>> attention;
  for (int64_t l = 0; draw && l < model->num_layers(); ++l) model->layer(l).attention().set_keep_probs(true);
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
    out.push_back(id);
    if (t + 1 == request.tokens) break;
    logits = model->forward_incremental(Tensor::from_vector(std::vector<int64_t>{id}, {1, 1}).to(device), cache, unused)
                 .value()
                 .to(kCPU);
    last = logits.reshape({V}).to_vector<double>();
    if (draw && request.tokens - t <= shown + 1) {
      queries.push_back(label(vocab.symbol(id)));
      std::vector<std::vector<float>> layers;
      for (int64_t l = 0; l < model->num_layers(); ++l)
        layers.push_back(model->layer(l).attention().last_probs().to(kCPU).to_vector<float>());  // [1, H, 1, W]
      attention.push_back(std::move(layers));
    }
  }
  fmt::print("{}{}\n", request.prompt, vocab.decode(out));
  std::fflush(stdout);
  if (draw) {
    if (model->config().attention.attend_self)
      fail("sample --figure: the figure reads distances 1..W; this run attends to the current token too");
    // Each layer's window (fixed while sampling: the parameters do not change).
    std::vector<int64_t> windows;
    for (int64_t l = 0; l < model->num_layers(); ++l) windows.push_back(model->layer(l).attention().window());
    draw_passage_attention(queries, attention, model->config().attention.heads, windows, 64, request.figure);
    fmt::print(stderr, "figure: {}\n", request.figure);
  }
}

}  // namespace posgrad::charlm
