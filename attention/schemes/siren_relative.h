// SirenRelative (registry name "siren"): posattn's implicit relative encoding (posattn spec
// sections 3 and 5). A SIREN maps each point of the relative grid to a D-vector,
//
//   E[r] = Siren(x_r),  x_r = (key - query offset)_d / (S_d - 1) in [-1, 1]^n   (normalized)
//                       x_r = integer offsets                                    (normalized: false)
//
// evaluated once per forward on all R = prod(2 S_d - 1) entries ([R, n] -> [R, D]); the two
// coordinates of a 2-D grid go into the network jointly. E is split head-major across the heads
// and used in Formula 1 with per-head u, v (relative_encoding.h):
//   A_ij = q_i.k_j + u.k_j + q_i.E[j - i] + v.E[j - i], all / sqrt(Dh).
// One SirenRelative per layer (the classifier builds one hook per layer).
//
// Options: hidden (64), layers (3), omega (10), omega_initial (0 = omega), normalized (true).
// Parameters: u, v [H, Dh]; siren.layers.<i>.weight/bias. Init: nn/siren.h, u/v relative_encoding.h.
//
// Deliberately not here: the Gaussian span (attention/spans/gaussian_span.h), sharing one encoder
// across layers, tree positions.
// Shapes: letters of shape_legend.h.
#pragma once

#include "attention/schemes/relative_encoding.h"
#include "nn/siren.h"

namespace posgrad {

struct SirenRelativeOptions {
  int64_t hidden = 64;
  int64_t layers = 3;
  double omega = 10.0;
  double omega_initial = 0.0;  // <= 0: omega
  bool normalized = true;
};

class SirenRelative : public RelativeEncodingScheme {
 public:
  // `dims`: n, the number of positional dims the grid will have (1 for sequences).
  SirenRelative(int64_t width, int64_t heads, int64_t dims, const SirenRelativeOptions& options, Generator& gen);

  Variable encode(const PositionPair& positions, DType dtype) override;  // [R, D]
  std::string summary() const override;

  int64_t dims() const { return dims_; }
  Siren& siren() { return *siren_; }

 private:
  int64_t dims_;
  SirenRelativeOptions options_;
  std::shared_ptr<Siren> siren_;
};

std::shared_ptr<AttentionHook> make_siren_relative(const HookContext& context, const HookOptions& options, Generator& gen);

}  // namespace posgrad
