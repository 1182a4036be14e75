// Sinusoid-based relative encodings in the Transformer-XL style, in two flavours (1-D only):
//
// "txl_baseline": posattn's baseline exactly (posattn spec section 4). Relative entry r = 0..2N-2
//   (offset key - query = r - (N - 1); the index itself, not the offset, is fed in), interleaved
//   sinusoids of width d_s = `hidden`
//       S[r, 2m] = sin(r * 10000^(-2m/d_s)),  S[r, 2m+1] = cos(r * 10000^(-2m/d_s))
//   and E = Linear(d_s, D) WITH bias (PyTorch default init), per layer, with its own u, v
//   (Xavier as posattn). Parameters: u, v, proj.weight, proj.bias. Option: hidden (64).
//
// "transformer_xl": the standard form (Dai et al. 2019; adaptive_span spec section 5). R is the
//   sinusoid of width D at the distance p = i - j = -(key - query), halves concatenated:
//       R[p] = [sin(p * f_0) .. sin(p * f_{D/2-1}) | cos(p * f_0) .. cos(p * f_{D/2-1})],
//       f_k = 10000^(-2k/D)
//   E = W_kR R with W_kR = Linear(D, D) WITHOUT bias, and the score is
//       [(q_i + u).k_j + (q_i + v).W_kR R_{i-j}] / sqrt(Dh)
//   returned as content (u.k)/sqrt(Dh) and positional ((q + v).E)/sqrt(Dh) (the pipeline adds
//   q.k/sqrt(Dh)). Parameters: u, v, w_kr.weight. Option init: xavier (default; u, v as posattn,
//   W_kR Xavier-uniform) | txl (spec 5.6: u, v, W_kR ~ N(0, 0.02)). Here u, v are per layer (the
//   PyTorch Transformer-XL shares one pair across the model) and there is no memory/clamp_len.
//
// Both apply Formula 1 through RelativeEncodingScheme (relative_encoding.h). The sinusoid tables
// are fixed: computed in double, cached per (N, dtype) in a plain member (not a buffer, so
// nothing depends on N in a checkpoint).
//
// Deliberately not here: grids (n > 1 is an error that points to "siren"), segment memory,
// learned absolute embeddings.
// Shapes: letters of shape_legend.h; R[p] and W_kR above are the paper's sinusoid and its
// projection, while R in a shape counts relative entries.
#pragma once

#include <map>
#include <tuple>
#include <utility>

#include "attention/schemes/relative_encoding.h"
#include "nn/linear.h"

namespace posgrad {

// The interleaved table of "txl_baseline": [R, width] at indices 0..R-1.
Tensor baseline_sinusoids(int64_t R, int64_t width, DType dtype);
// The concatenated table of "transformer_xl": [R, width] at distances -(offset) for the 1-D
// offsets lo..hi (R = hi - lo + 1, entry r has offset lo + r; self-attention over N tokens has
// lo = -(N - 1), hi = N - 1).
Tensor txl_sinusoids(int64_t lo, int64_t hi, int64_t width, DType dtype);

class SinusoidBaseline : public RelativeEncodingScheme {
 public:
  SinusoidBaseline(int64_t width, int64_t heads, int64_t hidden, Generator& gen);
  Variable encode(const PositionPair& positions, DType dtype) override;  // [R, D]
  std::string summary() const override;
  Linear& proj() { return *proj_; }

 private:
  int64_t hidden_;
  std::shared_ptr<Linear> proj_;
  std::map<std::tuple<int64_t, int64_t, DType>, Tensor> cache_;  // by (lo, hi, dtype)
};

class TransformerXLRelative : public RelativeEncodingScheme {
 public:
  enum class Init { Xavier, TransformerXL };
  TransformerXLRelative(int64_t width, int64_t heads, Init init, Generator& gen);
  Variable encode(const PositionPair& positions, DType dtype) override;  // [R, D]
  std::string summary() const override;
  Linear& w_kr() { return *w_kr_; }

 private:
  Init init_;
  std::shared_ptr<Linear> w_kr_;
  std::map<std::tuple<int64_t, int64_t, DType>, Tensor> cache_;  // by (lo, hi, dtype)
};

std::shared_ptr<AttentionHook> make_txl_baseline(const HookContext& context, const HookOptions& options, Generator& gen);
std::shared_ptr<AttentionHook> make_transformer_xl(const HookContext& context, const HookOptions& options, Generator& gen);

}  // namespace posgrad
