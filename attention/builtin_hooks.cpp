// The built-in attention hooks, registered with the registry on its first use. Adding a scheme
// means one include and one register_hook line here (docs/tutorial-new-scheme.md).
#include <functional>

#include "attention/registry.h"
#include "attention/schemes/no_position.h"
#include "attention/schemes/ape_grid.h"
#include "attention/schemes/ape_sequence.h"
#include "attention/schemes/ape_tree.h"
#include "attention/schemes/tree_sq.h"
#include "attention/spans/local_window.h"
#include "attention/schemes/t5_bias.h"
#include "attention/schemes/alibi.h"
#include "attention/schemes/key_pe.h"
#include "attention/schemes/learned_absolute.h"
#include "attention/schemes/rope.h"
#include "attention/schemes/shaw_relative.h"
#include "attention/schemes/sinusoidal_absolute.h"
#include "attention/spans/adaptive_span.h"
#include "attention/schemes/siren_relative.h"
#include "attention/schemes/transformer_xl.h"
#include "attention/spans/dynamic_span.h"
#include "attention/spans/gaussian_span.h"

namespace posgrad {

void register_builtin_hooks(const std::function<void(const std::string&, HookFactory, const std::string&)>& register_hook) {
  register_hook("none", make_no_position, "no positional information");
  register_hook("ape", make_ape_sequence, "algebraic PE: per-head orthogonal W^p on q and k at the flat index, decay^|j-i|");
  register_hook("ape_grid", make_ape_grid, "algebraic PE on n-D grids: one orthogonal generator per (axis, head) on Dh/n features");
  register_hook("ape_tree", make_ape_tree, "algebraic PE on trees: products of branch generators along the heap word");
  register_hook("tree_sq", make_tree_sq, "Shiv & Quirk tree PE: one-hot branch stacks times p^level, added to the embeddings");
  register_hook("local_window", make_local_window, "fixed sliding window of keys (radius per axis, optional causal)");
  register_hook("t5_bias", make_t5_bias, "T5 bucketed relative position bias (the tutorial scheme)");
  register_hook("sinusoidal", make_sinusoidal_absolute, "fixed sinusoidal absolute embedding at the flat token index");
  register_hook("learned_absolute", make_learned_absolute, "learned absolute embedding table [P, D]");
  register_hook("rope", make_rope, "rotary embedding of queries and keys (frozen or tuned frequencies)");
  register_hook("shaw", make_shaw_relative, "Shaw relative logits q . r[clip(j - i)]");
  register_hook("alibi", make_alibi, "ALiBi linear distance penalty with geometric head slopes");
  register_hook("key_pe", make_key_pe, "adaptive-span model's learned key position embedding: q . P[:, S - d] (1-D)");
  register_hook("adaptive_span", make_adaptive_span, "adaptive attention span: learned soft causal span per head");
  register_hook("dynamic_span", make_dynamic_span, "dynamic attention span: a soft causal span per query token, S sigmoid(v . x_t + b)");
  register_hook("siren", make_siren_relative, "posattn implicit relative encoding: SIREN on the n-D relative grid, Formula 1 with u, v");
  register_hook("txl_baseline", make_txl_baseline, "posattn baseline: interleaved sinusoids of indices 0..2N-2 + Linear with bias (1-D)");
  register_hook("transformer_xl", make_transformer_xl, "Transformer-XL relative attention: sinusoid of i - j, W_kR, u, v (1-D)");
  register_hook("gaussian_span", make_gaussian_span, "posattn Gaussian span: logits times exp(-x^2/2sigma^2), threshold box");
}

}  // namespace posgrad
