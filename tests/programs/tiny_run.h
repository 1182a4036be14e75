// TinyRun: the small training run shared by the checkpoint crash tests and their writer program
// (tests/programs/checkpoint_writer.cpp), so both sides agree bit for bit on what step N holds.
// A Linear(64, 64) (16.6 KB of weights, 33 KB of Adam buffers) learns a fixed linear map from
// inputs the generator draws each step, so the generator state matters for an exact resume.
// Saves at every 2nd step; the metric improves at every odd multiple of 3 (3, 9, 15, ...), so
// every 6th step writes a best-only folder between two saves.
// Deliberately not a realistic model: only the checkpoint traffic matters here.
#pragma once

#include <cstdint>

#include "nn/nn.h"
#include "posgrad.h"

namespace posgrad::test {

struct TinyRun {
  static constexpr int64_t kSaveEvery = 2;
  static constexpr int64_t kBestEvery = 3;

  Generator gen;
  Linear model;
  Adam opt;
  Tensor target_map;  // [D, D], D = 64

  explicit TinyRun(uint64_t seed = 7)
      : gen(seed), model(64, 64, gen), opt(model.parameters(), AdamOptions{.lr = 0.01}) {
    Generator fixed(11);
    target_map = normal({64, 64}, 0, 0.125, fixed);
  }

  // One optimizer step; returns the loss.
  double step() {
    const Tensor x = normal({8, 64}, 0, 1, gen);  // [B, D]
    Variable loss = mse_loss(model.forward(x), Variable(matmul(x, target_map)));
    opt.zero_grad();
    loss.backward();
    opt.step();
    return loss.item();
  }

  // The metric offered to RunCheckpoints::offer_best after step `step` (a multiple of 3): it
  // improves at odd multiples of 3 only.
  static double metric(int64_t step) { return (step / kBestEvery) % 2 == 1 ? static_cast<double>(step) : -1.0; }
};

}  // namespace posgrad::test
