// RelativeEncodingScheme: the part that posattn's SIREN and baseline encodings and the standard
// Transformer-XL encoding share (posattn spec section 5, Transformer-XL section 3.3). A subclass
// produces one D-vector per relative entry, E [R, D] (evaluated once per forward on the relative
// grid); this class splits it head-major into a table [H, R, Dh] and adds, per head h, query i,
// key j with r = key - query:
//
//   content    (u_h . k_j) / sqrt(Dh)                          (the content bias)
//   positional ((q_i + v_h) . E_h[r]) / sqrt(Dh)                 (positional attention + bias)
//
// as the tables of attention_terms.h: key_bias = u / sqrt(Dh), query_table = E / sqrt(Dh),
// bias = v . E / sqrt(Dh) (never a per-pair [H, Dh, N, N] tensor). The q.k term is the layer's own.
// u, v [H, Dh] are parameters registered first ("u", "v"); the subclass initialises them.
//
// Deliberately not here: how E is made (siren_relative.h, transformer_xl.h), span modulation
// (attention/spans/), trees (relative tables need grid offsets: an error names the positions).
// Shapes: letters of shape_legend.h.
#pragma once

#include "attention/registry.h"

namespace posgrad {

class RelativeEncodingScheme : public AttentionHook {
 public:
  RelativeEncodingScheme(int64_t width, int64_t heads);

  // E [R, D] for `positions` (R = positions.relative_size(), D = width) in `dtype`.
  virtual Variable encode(const PositionPair& positions, DType dtype) = 0;
  // E split head-major: [H, R, Dh], head h owns features h*Dh .. h*Dh + Dh - 1.
  Variable relative_table(const PositionPair& positions, DType dtype);

  // key_bias u / sqrt(Dh), query_table E / sqrt(Dh), bias (v . E) / sqrt(Dh).
  AttentionTerms attention_terms(const PositionPair& positions, DType dtype) override;

  const Variable& u() const { return u_; }  // [H, Dh]
  const Variable& v() const { return v_; }  // [H, Dh]
  int64_t width() const { return width_; }
  int64_t heads() const { return heads_; }
  int64_t head_width() const { return head_width_; }

 protected:
  // u, v ~ U(+-sqrt(6 / (Dh + Dh))): posattn's Xavier-uniform "as Dh x Dh tensors".
  void init_biases_xavier(Generator& gen);

  int64_t width_, heads_, head_width_;
  Variable u_, v_;
};

}  // namespace posgrad
