// bf16 autocast (tensor/autocast.h): the rounding to bf16 bit by bit, the CPU matmul under
// autocast against the float64 product of the rounded operands, the scope (nesting, per thread,
// float64 untouched) and, on a GPU, cuBLAS's bf16 tensor cores against the CPU's rounding.
// The model-level tolerances (a transformer's logits, gradients and AdamW steps against PyTorch's
// float32 golden file) are in tests/attention/test_golden_transformer.cpp.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "tensor/autocast.h"
#include "tensor/ops.h"
#include "tensor/random.h"
#include "tests/device_support.h"

using namespace posgrad;

namespace test_autocast_tests {

uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
float from_bits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// The product of a and b computed in float64 from the operands rounded to bf16: what a bf16
// matmul with exact accumulation gives.
Tensor bf16_reference(const Tensor& a, const Tensor& b) {
  return matmul(rounded_to_bf16(a).to(kFloat64), rounded_to_bf16(b).to(kFloat64));
}

// max |x - y| / max |y|.
double relative_error(const Tensor& x, const Tensor& y) {
  return max_abs_diff(x.to(kFloat64), y.to(kFloat64)) / amax(abs(y.to(kFloat64))).item();
}

}  // namespace test_autocast_tests

using namespace test_autocast_tests;

BOOST_AUTO_TEST_SUITE(autocast_bf16_rounding)

BOOST_AUTO_TEST_CASE(rounds_to_nearest_with_ties_to_even) {
  // bf16 keeps 7 stored mantissa bits: at 1 its step is 2^-7, half a step 2^-8.
  const float step = std::ldexp(1.0f, -7), half = std::ldexp(1.0f, -8);
  BOOST_TEST(round_to_bf16(1.0f) == 1.0f);
  BOOST_TEST(round_to_bf16(1.0f + half) == 1.0f);                 // tie: to the even 1.0
  BOOST_TEST(round_to_bf16(1.0f + 3 * half) == 1.0f + 2 * step);  // tie: to the even 1 + 2 steps
  BOOST_TEST(round_to_bf16(1.0f + half + std::ldexp(1.0f, -20)) == 1.0f + step);  // above the tie
  BOOST_TEST(round_to_bf16(1.0f + half - std::ldexp(1.0f, -20)) == 1.0f);         // below it
  BOOST_TEST(round_to_bf16(-3.0f) == -3.0f);
  BOOST_TEST(round_to_bf16(0.1f) == from_bits(0x3dcd0000u));  // 0x3dcccccd rounds up
  BOOST_TEST((bits_of(round_to_bf16(0.1f)) & 0xffffu) == 0u);
  // Infinities stay, NaN stays NaN, and the largest floats round up to infinity as they should.
  const float inf = std::numeric_limits<float>::infinity();
  BOOST_TEST(round_to_bf16(inf) == inf);
  BOOST_TEST(round_to_bf16(-inf) == -inf);
  BOOST_TEST(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  BOOST_TEST(std::isnan(round_to_bf16(from_bits(0x7f800001u))));  // a NaN whose low bits alone are set
  BOOST_TEST(round_to_bf16(std::numeric_limits<float>::max()) == inf);
  BOOST_TEST(round_to_bf16(from_bits(0x7f7f0000u)) == from_bits(0x7f7f0000u));  // bf16's largest
  // Subnormals round like any other value.
  BOOST_TEST(round_to_bf16(from_bits(0x00008000u)) == 0.0f);  // a tie, to the even 0
  BOOST_TEST(round_to_bf16(from_bits(0x00018000u)) == from_bits(0x00020000u));
}

BOOST_AUTO_TEST_CASE(rounded_copy_is_contiguous_and_rejects_other_dtypes) {
  Generator gen(7);
  const Tensor t = uniform({3, 5}, -2.0, 2.0, gen).transpose(0, 1);  // not contiguous
  const Tensor r = rounded_to_bf16(t);
  BOOST_TEST(r.is_contiguous());
  BOOST_TEST(r.shape() == t.shape());
  const auto a = t.contiguous().to_vector<float>(), b = r.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) BOOST_TEST(b[i] == round_to_bf16(a[i]));
  BOOST_CHECK_THROW(rounded_to_bf16(t.to(kFloat64)), Error);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(autocast_bf16_matmul)

BOOST_AUTO_TEST_CASE(cpu_matmul_multiplies_the_rounded_operands) {
  Generator gen(11);
  const Tensor a = uniform({2, 48, 96}, -1.0, 1.0, gen), b = uniform({96, 40}, -1.0, 1.0, gen);
  const Tensor exact = bf16_reference(a, b), plain = matmul(a, b);
  Tensor autocast;
  {
    AutocastBf16 scope;
    autocast = matmul(a, b);
  }
  BOOST_TEST((autocast.dtype() == kFloat32));
  // float32 sums of the same products: float32's rounding, far below bf16's.
  BOOST_TEST(relative_error(autocast, exact) < 1e-6);
  // Without autocast the product differs by about bf16's relative step (2^-8): the rounding acts.
  BOOST_TEST(relative_error(plain, exact) > 1e-4);
  // A transposed operand (read through its strides) gets the same numbers.
  Tensor transposed;
  {
    AutocastBf16 scope;
    transposed = matmul(a, b.transpose(0, 1).contiguous().transpose(0, 1));
  }
  BOOST_TEST(max_abs_diff(transposed, autocast) == 0.0);
}

BOOST_AUTO_TEST_CASE(float64_products_are_untouched) {
  Generator gen(12);
  const Tensor a = uniform({16, 32}, -1.0, 1.0, gen, kFloat64), b = uniform({32, 8}, -1.0, 1.0, gen, kFloat64);
  const Tensor plain = matmul(a, b);
  AutocastBf16 scope;
  BOOST_TEST(max_abs_diff(matmul(a, b), plain) == 0.0);
}

BOOST_AUTO_TEST_CASE(the_scope_nests_restores_and_is_per_thread) {
  BOOST_TEST(!autocast_bf16());
  {
    AutocastBf16 on;
    BOOST_TEST(autocast_bf16());
    {
      AutocastBf16 off(false);
      BOOST_TEST(!autocast_bf16());
    }
    BOOST_TEST(autocast_bf16());
    bool other_thread = true;
    std::thread([&] { other_thread = autocast_bf16(); }).join();
    BOOST_TEST(!other_thread);  // a thread starts outside any scope
  }
  BOOST_TEST(!autocast_bf16());
}

BOOST_AUTO_TEST_SUITE_END()

// cuBLAS's bf16 tensor cores on the GPU's bf16-rounded operands against the CPU's rounding.
BOOST_AUTO_TEST_SUITE(autocast_bf16_cuda, *boost::unit_test::precondition(posgrad::test::GpuPresent()))

BOOST_AUTO_TEST_CASE(cuda_matmul_matches_the_cpu_rounding) {
  Generator gen(13);
  // Sizes where cuBLAS takes its tensor-core kernels.
  const Tensor a = uniform({4, 256, 512}, -1.0, 1.0, gen), b = uniform({512, 384}, -1.0, 1.0, gen);
  const Tensor exact = bf16_reference(a, b), plain = matmul(a, b);
  Tensor gpu;
  {
    AutocastBf16 scope;
    gpu = matmul(a.to(posgrad::test::kGPU), b.to(posgrad::test::kGPU)).to(kCPU);
  }
  // The same bf16 products summed in float32 in another order: within float32's rounding of the
  // sum (1e-5 of the largest value, K = 512), and far from the float32 product.
  BOOST_TEST(relative_error(gpu, exact) < 1e-5, "max rel " << relative_error(gpu, exact));
  BOOST_TEST(relative_error(plain, exact) > 1e-4);
  // Outside the scope the GPU multiplies in float32 again.
  const Tensor back = matmul(a.to(posgrad::test::kGPU), b.to(posgrad::test::kGPU)).to(kCPU);
  BOOST_TEST(relative_error(back, plain) < 1e-5);
}

BOOST_AUTO_TEST_SUITE_END()
