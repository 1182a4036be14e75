// Comparing our tensors with a reference (PyTorch golden files): the worst ratio of the error to
// atol + rtol * |reference| over the elements, and a Boost.Test check built on it that names the
// tensor and logs its max |diff|. Shared by every golden test.
#pragma once

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "tensor/ops.h"

namespace posgrad::test {

struct CloseResult {
  double ratio = 0.0;     // max |ours - theirs| / (atol + rtol |theirs|); NaN counts as infinite
  double max_diff = 0.0;  // max |ours - theirs|; NaN counts as infinite
};

// `ours` may live on any device (it is read back to the CPU).
inline CloseResult compare_close(const Tensor& ours, const Tensor& theirs, double atol, double rtol) {
  const auto a = ours.to_vector<double>(), b = theirs.to_vector<double>();
  CloseResult r;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(a[i] - b[i]), ratio = d / (atol + rtol * std::abs(b[i]));
    r.ratio = std::max(r.ratio, std::isnan(ratio) ? INFINITY : ratio);
    r.max_diff = std::max(r.max_diff, std::isnan(d) ? INFINITY : d);
  }
  return r;
}

// Requires equal shapes; checks |ours - theirs| <= atol + rtol |theirs| everywhere. Returns max |diff|.
inline double expect_close(const std::string& what, const Tensor& ours, const Tensor& theirs, double atol, double rtol) {
  BOOST_REQUIRE_MESSAGE(ours.shape() == theirs.shape(), what << ": shape " << shape_str(ours.shape()) << " vs "
                                                             << shape_str(theirs.shape()));
  const CloseResult r = compare_close(ours, theirs, atol, rtol);
  BOOST_TEST_MESSAGE(fmt::format("  {:40s} max|diff| {:.3g}  (tolerance {:.0e} + {:.0e}|ref|)", what, r.max_diff, atol, rtol));
  BOOST_TEST(r.ratio <= 1.0, what << ": max |diff| " << r.max_diff << " exceeds atol " << atol << " + rtol " << rtol
                                  << " |ref|");
  return r.max_diff;
}

}  // namespace posgrad::test
