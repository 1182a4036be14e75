// CctModel and CctBlock (see cct_model.h).
// Shapes: cct_model.h's letters.
#include "apps/cct/cct_model.h"

#include <fmt/format.h>

#include "apps/cct/sinusoidal_grid.h"
#include "attention/registry.h"
#include "nn/init.h"
#include "tensor/conv.h"

namespace posgrad {

namespace {

// The token grid of an image, or one error line naming the tokenizer and the shapes.
std::vector<int64_t> tokenizer_grid(const CctConfig& c, int64_t image_size) {
  const Shape image{1, c.channels, image_size, image_size};
  const Conv2dOptions conv{{c.conv_stride, c.conv_stride}, {c.conv_padding, c.conv_padding}, {1, 1}, 1};
  const Pool2dOptions pool{{c.pool_kernel, c.pool_kernel}, {c.pool_stride, c.pool_stride}, {c.pool_padding, c.pool_padding}};
  try {
    const Window2d w = conv2d_window(image, {c.width, c.channels, c.conv_kernel, c.conv_kernel}, conv);
    const Window2d p = pool2d_window({1, c.width, w.out_h, w.out_w}, pool);
    return {p.out_h, p.out_w};
  } catch (const Error& e) {
    fail("CCT tokenizer (conv {}x{} stride {} padding {}, max_pool {}x{} stride {} padding {}) cannot tokenize a "
         "{}x{} image: {}",
         c.conv_kernel, c.conv_kernel, c.conv_stride, c.conv_padding, c.pool_kernel, c.pool_kernel, c.pool_stride,
         c.pool_padding, image_size, image_size, e.what());
  }
}

}  // namespace

CctBlock::CctBlock(const CctConfig& c, double drop_path, Generator& gen,
                   std::vector<std::shared_ptr<AttentionHook>> shared_hooks)
    : pre_norm_(c.pre_norm) {
  norm1_ = register_module("norm1", std::make_shared<LayerNorm>(c.width));
  attn_ = register_module("attn", std::make_shared<MultiHeadAttention>(c.width, c.heads, gen,
                                                                       std::vector<std::shared_ptr<AttentionHook>>{},
                                                                       std::move(shared_hooks)));
  attn_->set_path(c.path);
  attn_->set_attention_dropout(c.attention_dropout, gen.next_seed());
  norm2_ = register_module("norm2", std::make_shared<LayerNorm>(c.width));
  ff_ = register_module("ff", std::make_shared<FeedForward>(c.width, c.ff_width, "gelu", gen, c.ff_dropout));
  drop_path_ = register_module("drop_path", std::make_shared<DropPath>(drop_path, c.drop_path_rescale, gen.next_seed()));
}

Variable CctBlock::forward(const Variable& x, const Positions& positions) {
  if (pre_norm_) {
    Variable h = x + drop_path_->forward(attn_->forward(norm1_->forward(x), {}, &positions));
    return h + drop_path_->forward(ff_->forward(norm2_->forward(h)));
  }
  Variable h = norm1_->forward(x + drop_path_->forward(attn_->forward(x, {}, &positions)));
  return norm2_->forward(h + drop_path_->forward(ff_->forward(h)));
}

CctModel::CctModel(const CctConfig& c, Generator& gen) : config_(c) {
  if (c.width < 1 || c.heads < 1 || c.width % c.heads != 0)
    fail("CCT: the width {} must be a positive multiple of the heads {}", c.width, c.heads);
  if (c.layers < 0 || c.ff_width < 1 || c.classes < 1 || c.channels < 1)
    fail("CCT: layers must be >= 0 and ff_width, classes, channels >= 1");
  if (c.drop_path_step < 0 || c.drop_path_step * std::max<int64_t>(c.layers - 1, 0) >= 1.0)
    fail("CCT: drop_path_step {} gives the last of {} layers a drop probability >= 1", c.drop_path_step, c.layers);
  grid_ = tokenizer_grid(c, c.image_size);
  register_sinusoidal_grid();

  conv_ = register_module("tokenizer_conv", std::make_shared<Conv2d>(
                                                 c.channels, c.width, std::array<int64_t, 2>{c.conv_kernel, c.conv_kernel},
                                                 Conv2dOptions{{c.conv_stride, c.conv_stride}, {c.conv_padding, c.conv_padding}, {1, 1}, 1},
                                                 false, gen));
  init::kaiming_normal_(parameter("tokenizer_conv.weight").mutable_value(), gen, 0.0, init::FanMode::FanIn, "relu");
  pool_ = register_module("tokenizer_pool", std::make_shared<MaxPool2d>(Pool2dOptions{
                                                 {c.pool_kernel, c.pool_kernel}, {c.pool_stride, c.pool_stride}, {c.pool_padding, c.pool_padding}}));

  HookContext context{.width = c.width, .heads = c.heads, .structure = grid_, .layer = 0};
  std::vector<std::shared_ptr<AttentionHook>> shared;
  if (c.positional != "none") {
    positional_ = register_module("positional", make_hook(HookSpec{c.positional, HookOptions(c.positional_options)}, context, gen));
    absolute_ = std::dynamic_pointer_cast<AbsoluteEncoding>(positional_);
    if (!absolute_) shared.push_back(positional_);
  }
  input_dropout_ = register_module("input_dropout", std::make_shared<Dropout>(c.dropout, gen.next_seed()));
  for (int64_t l = 0; l < c.layers; ++l)
    blocks_.push_back(register_module(fmt::format("blocks.{}", l),
                                      std::make_shared<CctBlock>(c, c.drop_path_step * static_cast<double>(l), gen, shared)));
  if (c.pre_norm) final_norm_ = register_module("final_norm", std::make_shared<LayerNorm>(c.width));
  pooling_ = register_module("pool", std::make_shared<SequencePooling>(c.width, gen));
  head_ = register_module("head", std::make_shared<Linear>(c.width, c.classes, true, gen));

  // CCT's init: every Linear N(0, 0.02) with zero bias (LayerNorms start at 1 / 0 already).
  std::vector<std::string> linears{"pool.attention_pool", "head"};
  for (int64_t l = 0; l < c.layers; ++l)
    for (const char* name : {"attn.q_proj", "attn.k_proj", "attn.v_proj", "attn.out_proj", "ff.fc1", "ff.fc2"})
      linears.push_back(fmt::format("blocks.{}.{}", l, name));
  for (const std::string& name : linears) {
    init::normal_(parameter(name + ".weight").mutable_value(), 0.0, 0.02, gen);
    init::zeros_(parameter(name + ".bias").mutable_value());
  }
}

Variable CctModel::forward(const Variable& images) {
  const CctConfig& c = config_;
  if (images.dim() != 4 || images.size(1) != c.channels || images.size(2) != images.size(3))
    fail("CCT: images must be [B, {}, Y, Y] (square), got {}", c.channels, images.value().describe());
  const std::vector<int64_t> grid = images.size(2) == c.image_size ? grid_ : tokenizer_grid(c, images.size(2));
  if (grid != grid_)
    fail("CCT: a {}x{} image gives a {}x{} token grid, but the model was built for {}x{} images ({}x{} tokens)",
         images.size(2), images.size(3), grid[0], grid[1], c.image_size, c.image_size, grid_[0], grid_[1]);
  const int64_t B = images.size(0), N = grid_[0] * grid_[1];
  Variable t = pool_->forward(relu(conv_->forward(images)));  // [B, D, Ty, Tx]
  Variable h = transpose(reshape(t, {B, c.width, N}), 1, 2);   // [B, N, D]
  const Positions positions = Positions::grid(grid_);
  if (absolute_) h = absolute_->embed(h, positions);
  h = input_dropout_->forward(h);
  for (auto& block : blocks_) h = block->forward(h, positions);
  if (final_norm_) h = final_norm_->forward(h);
  return head_->forward(pooling_->forward(h));
}

void CctModel::set_path(AttentionPath path) {
  for (auto& block : blocks_) block->attention().set_path(path);
}

}  // namespace posgrad
