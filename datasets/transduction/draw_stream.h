// DrawStream: one sequential stream of random draws (uniform, normal, integer, choice) from a
// Philox key, for generators that draw a data-dependent number of values one after another (the
// transduction tasks: a length, then that many tokens; a tree, one decision at a time).
//
// Draw k uses Philox counter block k of the key (one block per draw, lane 0; normals use lanes 0
// and 1 of their block, Box-Muller), so the stream is a pure function of (key, number of draws so
// far): the same key always gives the same sequence of values on every machine.
// This file deliberately has no distributions beyond the four the task generators need, and no
// tensor fills (tensor/random.h draws whole tensors in parallel).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tensor/error.h"
#include "tensor/random.h"

namespace posgrad {

class DrawStream {
 public:
  explicit DrawStream(uint64_t key) : generator_(key) {}

  // A uniform double in the open interval (0, 1).
  double uniform() { return philox_uniform(generator_.seed(), generator_.reserve(1), 0); }

  // A normal double with the given mean and standard deviation.
  double normal(double mean, double stddev) {
    return mean + stddev * philox_normal(generator_.seed(), generator_.reserve(1), 0);
  }

  // A uniform integer in [low, high], both included (low <= high).
  int64_t integer(int64_t low, int64_t high) {
    if (low > high) fail("DrawStream::integer: empty range [{}, {}]", low, high);
    const double u = uniform();
    const int64_t span = high - low + 1;
    return low + std::min<int64_t>(span - 1, static_cast<int64_t>(u * static_cast<double>(span)));
  }

  // Index of a uniform choice among `count` items (count >= 1).
  int64_t index(int64_t count) { return integer(0, count - 1); }

  // A uniform choice among the values (not empty).
  int64_t choice(const std::vector<int64_t>& values) {
    if (values.empty()) fail("DrawStream::choice: nothing to choose from");
    return values[static_cast<size_t>(index(static_cast<int64_t>(values.size())))];
  }

  uint64_t draws() const { return generator_.offset(); }  // draws made so far

 private:
  Generator generator_;
};

}  // namespace posgrad
