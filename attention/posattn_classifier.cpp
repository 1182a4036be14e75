// PosattnClassifier (see posattn_classifier.h).
// Shapes: letters of shape_legend.h.
#include "attention/posattn_classifier.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "attention/registry.h"
#include "nn/init.h"

namespace posgrad {

namespace {

std::string number_text(double x) { return fmt::format("{}", x); }

}  // namespace

PosattnClassifier::PosattnClassifier(const PosattnClassifierConfig& config, Generator& gen) : config_(config) {
  const int64_t D = config.width;
  if (config.input_dim < 1 || config.classes < 1 || config.layers < 0 || config.output_hidden < 1)
    fail("PosattnClassifier: input_dim, classes and output_hidden must be >= 1 and layers >= 0");
  if (config.pooling != "last" && config.pooling != "mean" && config.pooling != "max")
    fail("PosattnClassifier: unknown pooling '{}' (valid: last, mean, max)", config.pooling);
  if (config.structure.empty() || shape_numel(config.structure) < 1)
    fail("PosattnClassifier: the structure must be non-empty with sizes >= 1, got [{}]", fmt::join(config.structure, ", "));
  if (config.dims != 1 && config.dims != static_cast<int64_t>(config.structure.size()))
    fail("PosattnClassifier: dims must be 1 or the structure's {} dims, got {}", config.structure.size(), config.dims);

  input_dropout_ = register_module("input_dropout", std::make_shared<Dropout>(config.dropout, gen.next_seed()));
  input_proj_ = register_module("input_proj", std::make_shared<Linear>(config.input_dim, D, true, gen));

  TransformerBlockConfig block;
  block.width = D;
  block.heads = config.heads;
  block.ff_width = config.ff_width;
  block.dropout = config.dropout;
  block.ff_dropout = config.dropout;
  block.pre_norm = false;
  block.activation = "relu";
  block.path = config.path;
  HookContext context;
  context.width = D;
  context.heads = config.heads;
  context.structure = config.dims == 1 ? std::vector<int64_t>{shape_numel(config.structure)} : config.structure;
  const HookSpec positional{config.positional, HookOptions(config.positional_options)};
  // Layer 0's scheme is built here, at the point of the generator's sequence where the loop
  // would build it (after input_proj, before block 0), to learn whether it is absolute.
  // An absolute scheme is the model's, once: added to the token embeddings before the first
  // layer, as APE adds its sinusoidal and absolute baselines to the image tokens (spec ape.md
  // section 6, rows "Sinusoidal 2D (images)" and "Absolute (images)"). No sqrt(D) factor: the
  // scaling of section 3.5 belongs to APE's vocabulary embedding, and our tokens are Linear(C, D)
  // projections of the pixels, as the image rows' patches are.
  context.layer = 0;
  std::shared_ptr<AttentionHook> first = make_hook(positional, context, gen);
  absolute_ = std::dynamic_pointer_cast<AbsoluteEncoding>(first);
  if (absolute_) register_module("absolute", absolute_);
  for (int64_t i = 0; i < config.layers; ++i) {
    context.layer = i;
    std::vector<std::shared_ptr<AttentionHook>> hooks;
    if (!absolute_) hooks.push_back(i == 0 ? first : make_hook(positional, context, gen));
    if (config.span) {
      std::map<std::string, std::string> o = config.span_options;
      o["sigma"] = number_text(config.sigma);
      o["threshold"] = number_text(config.threshold);
      o["multiply"] = config.multiply;
      hooks.push_back(make_hook(HookSpec{"gaussian_span", HookOptions(o)}, context, gen));
    }
    auto b = register_module(fmt::format("blocks.{}", i), std::make_shared<TransformerEncoderBlock>(block, gen, hooks));
    blocks_.push_back(b);
    // posattn: the fused qkv_proj Linear(D, 3D) and o_proj are Xavier-uniform with zero bias.
    // Our q/k/v are three Linear(D, D): each takes the fused matrix's bound sqrt(6 / (D + 3D)).
    const double qkv_bound = std::sqrt(6.0 / static_cast<double>(D + 3 * D));
    for (const char* name : {"q_proj", "k_proj", "v_proj"}) {
      init::uniform_(b->parameter(fmt::format("attn.{}.weight", name)).mutable_value(), -qkv_bound, qkv_bound, gen);
      init::zeros_(b->parameter(fmt::format("attn.{}.bias", name)).mutable_value());
    }
    init::xavier_uniform_(b->parameter("attn.out_proj.weight").mutable_value(), gen);
    init::zeros_(b->parameter("attn.out_proj.bias").mutable_value());
  }

  output_fc1_ = register_module("output_fc1", std::make_shared<Linear>(D, config.output_hidden, true, gen));
  output_norm_ = register_module("output_norm", std::make_shared<LayerNorm>(config.output_hidden));
  output_dropout_ = register_module("output_dropout", std::make_shared<Dropout>(config.dropout, gen.next_seed()));
  output_fc2_ = register_module("output_fc2", std::make_shared<Linear>(config.output_hidden, config.classes, true, gen));
}

Positions PosattnClassifier::positions_for(const std::vector<int64_t>& spatial) const {
  const int64_t N = shape_numel(spatial);
  if (config_.dims == 1) return Positions::sequence(N);
  if (static_cast<int64_t>(spatial.size()) == config_.dims) return Positions::grid(spatial);
  if (spatial.size() == 1 && shape_numel(config_.structure) == N) return Positions::grid(config_.structure);
  fail("PosattnClassifier: {}-D positions need {} spatial axes (or [B, N, C] with N = {}), got spatial sizes [{}]",
       config_.dims, config_.dims, shape_numel(config_.structure), fmt::join(spatial, ", "));
}

Variable PosattnClassifier::forward(const Variable& x) {
  if (x.dim() < 3 || x.size(-1) != config_.input_dim)
    fail("PosattnClassifier: input must be [B, S0, ..., {}] or [B, N, {}], got {}", config_.input_dim,
         config_.input_dim, x.value().describe());
  const int64_t B = x.size(0);
  std::vector<int64_t> spatial(x.shape().begin() + 1, x.shape().end() - 1);
  const Positions positions = positions_for(spatial);
  const int64_t N = positions.tokens();
  Variable h = input_proj_->forward(input_dropout_->forward(reshape(x, {B, N, config_.input_dim})));  // [B, N, D]
  if (absolute_) h = absolute_->embed(h, positions);
  for (auto& block : blocks_) h = block->forward(h, {}, &positions);
  Variable pooled;  // [B, D]
  if (config_.pooling == "last")
    pooled = select(h, 1, N - 1);
  else if (config_.pooling == "mean")
    pooled = mean(h, {1});
  else
    pooled = amax(h, {1});
  Variable z = relu(output_norm_->forward(output_fc1_->forward(pooled)));
  return output_fc2_->forward(output_dropout_->forward(z));
}

void PosattnClassifier::set_path(AttentionPath path) {
  for (auto& block : blocks_) block->attention().set_path(path);
}

std::vector<std::string> PosattnClassifier::hook_summaries() const {
  std::vector<std::string> lines;
  if (absolute_) lines.push_back("token embeddings: " + absolute_->summary());
  for (size_t i = 0; i < blocks_.size(); ++i) {
    std::vector<std::string> parts;
    for (const auto& hook : blocks_[i]->attention().hooks()) parts.push_back(hook->summary());
    lines.push_back(fmt::format("layer {}: {}", i, parts.empty() ? "no hooks" : fmt::format("{}", fmt::join(parts, "; "))));
  }
  return lines;
}

}  // namespace posgrad
