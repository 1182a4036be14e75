// count24 generation (see count24.h).
#include "datasets/count24.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "datasets/seeding.h"
#include "tensor/error.h"
#include "tensor/random.h"

namespace posgrad {

int64_t count24_label(std::span<const int64_t> digits) {
  int64_t twos = 0, fours = 0;
  for (int64_t d : digits) {
    twos += d == 2;
    fours += d == 4;
  }
  return twos > fours ? 1 : 0;
}

Count24 make_count24(int64_t num, uint64_t seed) {
  if (num < 1) fail("make_count24: the number of sequences must be >= 1, got {}", num);
  const int64_t n = kCount24Length;
  Generator gen(derive_seed(seed, SeedStream::Count24));
  const uint64_t offset = gen.reserve(static_cast<uint64_t>(num * n));
  std::vector<int64_t> digits(static_cast<size_t>(num * n));
  std::vector<float> labels(static_cast<size_t>(num));
  for (int64_t b = 0; b < num; ++b) {
    int64_t* row = digits.data() + b * n;
    for (int64_t t = 0; t < n; ++t) {
      const double u = philox_uniform(gen.seed(), offset, static_cast<uint64_t>(b * n + t));
      row[t] = std::min<int64_t>(9, static_cast<int64_t>(u * 10.0));  // u in (0, 1)
    }
    labels[static_cast<size_t>(b)] = static_cast<float>(count24_label({row, static_cast<size_t>(n)}));
  }
  return Count24{Tensor::from_vector(digits, {num, n}), Tensor::from_vector(labels, {num, 1})};
}

std::shared_ptr<TensorDataset> Count24::dataset() const {
  return std::make_shared<TensorDataset>(inputs, labels);
}

double positive_fraction(const Tensor& labels) {
  if (!labels.defined() || labels.numel() == 0) fail("positive_fraction: no labels");
  const std::vector<double> v = labels.to_vector<double>();
  int64_t positives = 0;
  for (double x : v) positives += x == 1.0;
  return static_cast<double>(positives) / static_cast<double>(v.size());
}

double count24_positive_probability() {
  // P(#2 == #4 == k) = C(10, k) C(10 - k, k) 8^(10 - 2k) / 10^10, summed over k.
  const auto choose = [](int64_t n, int64_t k) {
    double r = 1.0;
    for (int64_t i = 1; i <= k; ++i) r = r * static_cast<double>(n - k + i) / static_cast<double>(i);
    return r;
  };
  const int64_t n = kCount24Length;
  double equal = 0.0;
  for (int64_t k = 0; 2 * k <= n; ++k)
    equal += choose(n, k) * choose(n - k, k) * std::pow(8.0, static_cast<double>(n - 2 * k));
  equal /= std::pow(10.0, static_cast<double>(n));
  return (1.0 - equal) / 2.0;
}

}  // namespace posgrad
