// The CUDA backend against the CPU backend: every Backend primitive forward (copies and dtype
// conversion, fill, unary, binary with broadcasting and strides, where, accumulate, reductions,
// argmax, matmul, softmax, layer norm, indexing, Philox random numbers), autograd backward of the
// main ops, the fused Adam kernel, the caching allocator's reuse, and the errors a user gets.
// Inputs are random and kept away from zero; each check states its tolerance.
//
// Without a usable GPU (a CPU-only build, or no driver/device) every case of the `cuda_parity`
// suite is reported as skipped by its precondition (GPU_TEST_CASE); the `cuda_absent` suite then
// checks that asking for a CUDA tensor is a clear posgrad::Error, never a crash.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <thread>

#include "nn/optimizer.h"
#include "posgrad.h"
#include "tensor/device.h"
#include "tests/device_support.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::throws_with;

namespace {

using posgrad::test::GpuAbsent;
using posgrad::test::GpuPresent;
using posgrad::test::kGPU;


// Uniform in +-[0.25, 2]: random, non-zero, signs mixed.
Tensor nonzero(const Shape& shape, Generator& gen, DType dtype = kFloat32) {
  Tensor u = uniform(shape, -1.0, 1.0, gen, kFloat64);
  Tensor t = add_scalar(mul_scalar(abs(u), 1.75), 0.25) * sign(u);
  return t.to(dtype);
}
// Uniform in [lo, hi] (domains of log, sqrt, pow).
Tensor positive(const Shape& shape, Generator& gen, DType dtype = kFloat32, double lo = 0.25,
                double hi = 3.0) {
  return uniform(shape, lo, hi, gen, kFloat64).to(dtype);
}

// `gpu` (a CUDA tensor) equals `cpu` within |gpu - cpu| <= atol + rtol * |cpu|, elementwise.
void check_close(const Tensor& cpu, const Tensor& gpu, double rtol, double atol, const std::string& what) {
  BOOST_TEST_CONTEXT(what) {
    BOOST_TEST(gpu.device().is_cuda());
    BOOST_TEST((gpu.dtype() == cpu.dtype()));
    BOOST_REQUIRE(gpu.shape() == cpu.shape());
    const Tensor back = gpu.to(kCPU);
    BOOST_TEST(allclose(back, cpu, rtol, atol), "max |gpu - cpu| = " << max_abs_diff(back, cpu)
                                                   << " (rtol " << rtol << ", atol " << atol << ")");
  }
}
void check_equal(const Tensor& cpu, const Tensor& gpu, const std::string& what) {
  check_close(cpu, gpu, 0.0, 0.0, what);
}

// Per-dtype tolerances of elementwise results: libdevice and glibc differ by a few ulp.
double rtol_of(DType t) { return t == kFloat32 ? 2e-6 : 1e-13; }
double atol_of(DType t) { return t == kFloat32 ? 1e-6 : 1e-14; }

}  // namespace

// A test case that needs a GPU: without one, the log reports it as skipped, with the reason.
#define GPU_TEST_CASE(name) BOOST_AUTO_TEST_CASE(name, *boost::unit_test::precondition(GpuPresent()))

// ================================================================ without a GPU

BOOST_AUTO_TEST_SUITE(cuda_absent, *boost::unit_test::precondition(GpuAbsent()))

BOOST_AUTO_TEST_CASE(asking_for_a_cuda_tensor_is_a_clear_error) {
  BOOST_TEST(cuda_device_count() == 0);
  BOOST_TEST(!cuda_unavailable_reason().empty());
  BOOST_TEST_MESSAGE("reason: " << cuda_unavailable_reason());
  test::check_error([] { Tensor::zeros({2, 3}, kFloat32, kGPU); }, {"cuda:0", "CUDA"});
  const Tensor x = Tensor::ones({4});
  test::check_error([&] { x.to(kGPU); }, {"cuda:0", "CUDA"});
  Generator gen(1);
  test::check_error([&] { uniform({3}, 0, 1, gen, kFloat32, kGPU); }, {"CUDA"});
  test::check_error([] { require_device(Device::parse("cuda:1")); }, {"cuda:1", "CUDA"});
  test::check_error([] { synchronize(kGPU); }, {"CUDA"});
  require_device(kCPU);  // the CPU is always there
  const CudaMemoryStats s = cuda_memory_stats();
  BOOST_TEST(s.device_mallocs == 0);
  cuda_empty_cache();  // a no-op, not an error
  test::check_error([] { DeviceTimer timer(kGPU); }, {"cuda:0", "CUDA"});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(device_timer_on_the_cpu_reads_the_host_clock) {
  DeviceTimer timer(kCPU);
  timer.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  timer.stop();
  BOOST_TEST(timer.elapsed_ms() >= 29.0);
  BOOST_TEST(timer.elapsed_ms() < 5000.0);
}

// ================================================================ with a GPU

BOOST_AUTO_TEST_SUITE(cuda_parity)

GPU_TEST_CASE(availability_is_consistent) {
  BOOST_TEST(cuda_device_count() >= 1);
  BOOST_TEST(cuda_unavailable_reason().empty());
  test::check_error([] { require_device(Device{DeviceType::CUDA, 99}); }, {"cuda:99", "only"});
}

GPU_TEST_CASE(copies_between_host_and_device_and_dtypes) {
  Generator gen(1);
  for (DType t : {kFloat32, kFloat64, kInt64}) {
    const Tensor x = t == kInt64 ? Tensor::arange(60).reshape({3, 4, 5}) : nonzero({3, 4, 5}, gen, t);
    const Tensor g = x.to(kGPU);
    check_equal(x, g, std::string("round trip ") + dtype_name(t));
    // Non-contiguous sources, both ways.
    check_equal(x.transpose(0, 2).contiguous(), x.transpose(0, 2).to(kGPU), "strided host -> device");
    check_equal(x.transpose(0, 2).contiguous(), g.transpose(0, 2).contiguous(), "strided device copy");
    check_equal(x.slice(1, 1, 4, 2).contiguous(), g.slice(1, 1, 4, 2).to(kCPU).to(kGPU), "sliced device -> host");
    // Dtype conversion on the device.
    for (DType u : {kFloat32, kFloat64, kInt64}) check_equal(x.to(u), g.to(u), "device cast");
  }
  // copy_ into a strided device view from a broadcast device source.
  Tensor d = Tensor::zeros({4, 6}, kFloat32, kGPU);
  Tensor col = Tensor::from_vector({1.f, 2.f, 3.f, 4.f}, {4, 1}).to(kGPU);
  Tensor view = d.slice(1, 0, 6, 2);  // columns 0, 2, 4
  view.copy_(col);
  Tensor expect = Tensor::zeros({4, 6});
  Tensor ev = expect.slice(1, 0, 6, 2);
  ev.copy_(Tensor::from_vector({1.f, 2.f, 3.f, 4.f}, {4, 1}));
  check_equal(expect, d, "copy_ into a strided view");
  // fill_ on a non-contiguous view, and the factories.
  view.fill_(-3.0);
  ev.fill_(-3.0);
  check_equal(expect, d, "fill_ on a view");
  check_equal(Tensor::full({5, 3}, 2.5, kFloat64), Tensor::full({5, 3}, 2.5, kFloat64, kGPU), "full");
  check_equal(Tensor::arange(17), Tensor::arange(17, kInt64, kGPU), "arange");
  check_equal(Tensor::zeros({0, 3}), Tensor::zeros({0, 3}, kFloat32, kGPU), "empty tensor");
  BOOST_TEST(Tensor::scalar(7.0, kFloat32, kGPU).item() == 7.0);
}

GPU_TEST_CASE(unary_ops_match_the_cpu) {
  Generator gen(2);
  struct Case { UnaryOp op; bool positive; double p, q; const char* name; };
  const Case cases[] = {
      {UnaryOp::Neg, false, 0, 0, "neg"},         {UnaryOp::Exp, false, 0, 0, "exp"},
      {UnaryOp::Log, true, 0, 0, "log"},          {UnaryOp::Sqrt, true, 0, 0, "sqrt"},
      {UnaryOp::Rsqrt, true, 0, 0, "rsqrt"},      {UnaryOp::Abs, false, 0, 0, "abs"},
      {UnaryOp::Sign, false, 0, 0, "sign"},       {UnaryOp::Sin, false, 0, 0, "sin"},
      {UnaryOp::Cos, false, 0, 0, "cos"},         {UnaryOp::Tanh, false, 0, 0, "tanh"},
      {UnaryOp::Sigmoid, false, 0, 0, "sigmoid"}, {UnaryOp::Relu, false, 0, 0, "relu"},
      {UnaryOp::Gelu, false, 0, 0, "gelu"},       {UnaryOp::Square, false, 0, 0, "square"},
      {UnaryOp::Reciprocal, false, 0, 0, "reciprocal"},
      {UnaryOp::AddScalar, false, 1.5, 0, "add_scalar"}, {UnaryOp::MulScalar, false, -0.75, 0, "mul_scalar"},
      {UnaryOp::PowScalar, true, 2.0, 0, "pow 2"}, {UnaryOp::PowScalar, true, 1.7, 0, "pow 1.7"},
      {UnaryOp::Clamp, false, -0.5, 0.8, "clamp"}, {UnaryOp::GeluGrad, false, 0, 0, "gelu_grad"},
      {UnaryOp::ReluMask, false, 0, 0, "relu_mask"}};
  for (DType t : {kFloat32, kFloat64}) {
    for (const Case& c : cases) {
      const Tensor x = c.positive ? positive({7, 33}, gen, t) : nonzero({7, 33}, gen, t);
      const Tensor g = x.to(kGPU);
      const std::string what = std::string(c.name) + " " + dtype_name(t);
      // sin/cos/exp of float32 in libdevice: up to 2 ulp, hence a relative 2e-6 (about 16 ulp).
      check_close(unary(c.op, x, c.p, c.q), unary(c.op, g, c.p, c.q), rtol_of(t), atol_of(t), what);
      // The same op on a transposed view (strided input).
      check_close(unary(c.op, x.transpose(0, 1), c.p, c.q), unary(c.op, g.transpose(0, 1), c.p, c.q),
                  rtol_of(t), atol_of(t), what + " (transposed)");
    }
  }
  const Tensor i = Tensor::from_vector(std::vector<int64_t>{-5, -1, 0, 2, 9, 40}, {2, 3});
  for (UnaryOp op : {UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Sign, UnaryOp::AddScalar, UnaryOp::MulScalar, UnaryOp::Clamp})
    check_equal(unary(op, i, 3, 7), unary(op, i.to(kGPU), 3, 7), "int64 unary");
}

GPU_TEST_CASE(binary_ops_with_broadcasting_and_strides) {
  Generator gen(3);
  const BinaryOp ops[] = {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Pow,
                          BinaryOp::Maximum, BinaryOp::Minimum, BinaryOp::Eq, BinaryOp::Ne,
                          BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge};
  for (DType t : {kFloat32, kFloat64}) {
    const Tensor a = positive({3, 1, 5}, gen, t);        // broadcast along axis 1
    const Tensor b = positive({5, 4}, gen, t).transpose(0, 1);  // [4, 5], strided
    Tensor b_eq = b.contiguous();
    b_eq.slice(1, 0, 1).copy_(a.select(0, 0).slice(1, 0, 1).expand({4, 1}));  // some equal pairs
    const Tensor ga = a.to(kGPU), gb = b.to(kGPU).transpose(0, 1).contiguous().transpose(0, 1);
    for (BinaryOp op : ops) {
      const std::string what = fmt::format("binary op {} {}", static_cast<int>(op), dtype_name(t));
      check_close(binary(op, a, b), binary(op, ga, gb), rtol_of(t), atol_of(t), what);
      check_close(binary(op, a, b_eq), binary(op, ga, b_eq.to(kGPU)), rtol_of(t), atol_of(t), what + " (ties)");
    }
    // A scalar operand (all strides 0) and the ops with a plain double.
    const Tensor s = Tensor::scalar(0.5, t);
    check_close(a * s, ga * s.to(kGPU), rtol_of(t), atol_of(t), "scalar broadcast");
    check_close(a / 3.0 - 1.0, ga / 3.0 - 1.0, rtol_of(t), atol_of(t), "scalar ops");
  }
  const Tensor ia = Tensor::from_vector(std::vector<int64_t>{7, -8, 9, 10, 0, 3}, {2, 3});
  const Tensor ib = Tensor::from_vector(std::vector<int64_t>{2, 3, -4}, {3});
  for (BinaryOp op : ops)
    check_equal(binary(op, ia, ib), binary(op, ia.to(kGPU), ib.to(kGPU)), "int64 binary");
  test::check_error([&] { div(ia.to(kGPU), Tensor::zeros({3}, kInt64, kGPU)); }, {"div", "division by zero"});
}

GPU_TEST_CASE(where_masked_fill_and_accumulate) {
  Generator gen(4);
  const Tensor x = nonzero({4, 6}, gen), y = nonzero({6}, gen);
  const Tensor cond = gt(nonzero({4, 1}, gen), Tensor::scalar(0.0));
  check_equal(where(cond, x, y), where(cond.to(kGPU), x.to(kGPU), y.to(kGPU)), "where");
  const Tensor mask64 = cond.to(kInt64);  // any dtype of mask
  check_equal(masked_fill(x, mask64, -1e9), masked_fill(x.to(kGPU), mask64.to(kGPU), -1e9), "masked_fill");
  Tensor acc = x.clone(), gacc = x.to(kGPU);
  add_(acc, y);
  add_(gacc, y.to(kGPU));
  add_(acc, x.transpose(0, 1).contiguous().transpose(0, 1));
  add_(gacc, x.to(kGPU).transpose(0, 1).contiguous().transpose(0, 1));
  check_close(acc, gacc, 1e-6, 1e-6, "add_ with broadcast and strides");
}

GPU_TEST_CASE(reductions_and_argmax) {
  Generator gen(5);
  for (DType t : {kFloat32, kFloat64}) {
    const Tensor x = nonzero({6, 7, 8}, gen, t);
    const Tensor g = x.to(kGPU);
    const double rtol = t == kFloat32 ? 1e-6 : 1e-12;
    for (const std::vector<int64_t>& axes : std::vector<std::vector<int64_t>>{{}, {0}, {1}, {2}, {0, 2}}) {
      const std::string what = fmt::format("axes {} {}", shape_str(axes), dtype_name(t));
      check_close(sum(x, axes), sum(g, axes), rtol, 1e-6, "sum " + what);
      check_close(mean(x, axes, true), mean(g, axes, true), rtol, 1e-7, "mean " + what);
      check_equal(amax(x, axes), amax(g, axes), "amax " + what);
      check_equal(amin(x, axes), amin(g, axes), "amin " + what);
      check_close(var(x, axes), var(g, axes), rtol, 1e-7, "var " + what);
      check_close(var(x, axes, false, 0), var(g, axes, false, 0), rtol, 1e-7, "biased var " + what);
    }
    // Long rows take the split (two-kernel) path.
    const Tensor lx = nonzero({3, 100003}, gen, t);
    const Tensor lg = lx.to(kGPU);
    check_close(sum(lx, {1}), sum(lg, {1}), rtol, 1e-5, "sum of long rows");
    check_close(var(lx, {1}), var(lg, {1}), rtol, 1e-7, "var of long rows");
    check_equal(amax(lx), amax(lg), "amax of everything");
    check_equal(argmax(lx, 1), argmax(lg, 1), "argmax of long rows");
    check_equal(argmax(x, 0), argmax(g, 0), "argmax axis 0");
    check_equal(argmax(x, -1, true), argmax(g, -1, true), "argmax keepdim");
  }
  // Ties: the first maximum wins, as on the CPU.
  const Tensor ties = Tensor::from_vector({1.f, 5.f, 5.f, 2.f, 5.f, 0.f}, {2, 3});
  check_equal(argmax(ties, 1), argmax(ties.to(kGPU), 1), "argmax ties");
  const Tensor ix = Tensor::from_vector(std::vector<int64_t>{3, -7, 12, 5, 5, -1}, {2, 3});
  check_equal(sum(ix, {1}), sum(ix.to(kGPU), {1}), "int64 sum");
  check_equal(amax(ix, {0}), amax(ix.to(kGPU), {0}), "int64 amax");
  check_equal(argmax(ix, 1), argmax(ix.to(kGPU), 1), "int64 argmax");
  check_equal(sum(Tensor::zeros({3, 0})), sum(Tensor::zeros({3, 0}, kFloat32, kGPU)), "empty sum");
}

GPU_TEST_CASE(matmul_through_cublas) {
  Generator gen(6);
  // float32 without TF32: products accumulate in float32 in another order, so relative 1e-5
  // of the result's scale (|entries| <= K * 4 here) is the bound.
  auto check = [&](const Tensor& a, const Tensor& b, double tol, const std::string& what) {
    check_close(matmul(a, b), matmul(a.to(kGPU), b.to(kGPU)), tol, tol, what);
  };
  for (DType t : {kFloat32, kFloat64}) {
    const double tol = t == kFloat32 ? 2e-5 : 1e-12;
    const std::string d = dtype_name(t);
    check(nonzero({17, 33}, gen, t), nonzero({33, 9}, gen, t), tol * 33, "2-D " + d);
    check(nonzero({4, 17, 33}, gen, t), nonzero({4, 33, 9}, gen, t), tol * 33, "batched " + d);
    check(nonzero({17, 33}, gen, t), nonzero({3, 33, 9}, gen, t), tol * 33, "broadcast batch " + d);
    check(nonzero({33, 17}, gen, t).transpose(0, 1), nonzero({9, 33}, gen, t).transpose(0, 1), tol * 33,
          "both transposed " + d);
    check(nonzero({2, 3, 33, 17}, gen, t).transpose(-1, -2), nonzero({3, 33, 9}, gen, t), tol * 33,
          "batched transposed " + d);
    check(nonzero({5, 40, 6}, gen, t).slice(1, 0, 40, 2).transpose(1, 2), nonzero({20, 7}, gen, t), tol * 20,
          "sliced and transposed " + d);
    check(nonzero({7, 24}, gen, t).slice(1, 0, 24, 2), nonzero({12, 5}, gen, t), tol * 12,
          "no unit stride (copied first) " + d);
    check(nonzero({1, 33}, gen, t), nonzero({33, 1}, gen, t), tol * 33, "1 x 1 result " + d);
    check_equal(matmul(Tensor::zeros({3, 0}, t), Tensor::zeros({0, 4}, t)),
                matmul(Tensor::zeros({3, 0}, t, kGPU), Tensor::zeros({0, 4}, t, kGPU)), "K = 0 " + d);
  }
  // TF32 on: about 10 mantissa bits per product.
  set_cuda_allow_tf32(true);
  check(nonzero({64, 64}, gen), nonzero({64, 64}, gen), 1e-1, "float32 with TF32");
  set_cuda_allow_tf32(false);
  BOOST_TEST(!cuda_allow_tf32());
}

GPU_TEST_CASE(softmax_and_log_softmax_forward_and_backward) {
  Generator gen(7);
  for (DType t : {kFloat32, kFloat64}) {
    const double tol = t == kFloat32 ? 1e-6 : 1e-13;
    Tensor x = nonzero({5, 9, 300}, gen, t);
    x.select(0, 1).select(0, 2).fill_(-std::numeric_limits<double>::infinity());  // a masked row
    const Tensor g = x.to(kGPU);
    const Tensor dy = nonzero({5, 9, 300}, gen, t);
    for (int64_t axis : {-1, 1}) {
      for (bool log : {false, true}) {
        const std::string what = fmt::format("{}softmax axis {} {}", log ? "log_" : "", axis, dtype_name(t));
        const Tensor y = log ? log_softmax(x, axis) : softmax(x, axis);
        const Tensor gy = log ? log_softmax(g, axis) : softmax(g, axis);
        // log_softmax is -inf at masked entries (inf - inf is no difference): compare exp(y).
        check_close(log ? exp(y) : y, log ? exp(gy) : gy, tol, tol, what);
        check_close(softmax_backward(y, dy, axis, log), softmax_backward(gy, dy.to(kGPU), axis, log),
                    tol * 10, tol * 10, what + " backward");
      }
    }
  }
}

GPU_TEST_CASE(layer_norm_forward_and_backward) {
  Generator gen(8);
  for (DType t : {kFloat32, kFloat64}) {
    const double tol = t == kFloat32 ? 1e-5 : 1e-12;
    for (int64_t rows : {3, 700}) {
      const Tensor x = nonzero({rows, 96}, gen, t), w = nonzero({96}, gen, t), b = nonzero({96}, gen, t);
      const Tensor dy = nonzero({rows, 96}, gen, t);
      for (bool affine : {true, false}) {
        const Tensor wc = affine ? w : Tensor(), bc = affine ? b : Tensor();
        const Tensor wg = affine ? w.to(kGPU) : Tensor(), bg = affine ? b.to(kGPU) : Tensor();
        const auto c = layer_norm(x, wc, bc, 1e-5);
        const auto g = layer_norm(x.to(kGPU), wg, bg, 1e-5);
        const std::string what = fmt::format("layer_norm rows {} affine {} {}", rows, affine, dtype_name(t));
        check_close(c.y, g.y, tol, tol, what + " y");
        check_close(c.mean, g.mean, tol, tol, what + " mean");
        check_close(c.rstd, g.rstd, tol, tol, what + " rstd");
        const auto cg = layer_norm_backward(dy, x, wc, c.mean, c.rstd);
        const auto gg = layer_norm_backward(dy.to(kGPU), x.to(kGPU), wg, g.mean, g.rstd);
        check_close(cg.dx, gg.dx, tol * 10, tol * 10, what + " dx");
        if (affine) {
          // Sums over `rows` rows: absolute error grows with the row count.
          check_close(cg.dweight, gg.dweight, tol * 10, tol * rows, what + " dweight");
          check_close(cg.dbias, gg.dbias, tol * 10, tol * rows, what + " dbias");
        }
      }
    }
  }
}

GPU_TEST_CASE(indexing_ops) {
  Generator gen(9);
  for (DType t : {kFloat32, kFloat64, kInt64}) {
    const Tensor x = t == kInt64 ? Tensor::arange(4 * 10 * 3).reshape({4, 10, 3}) : nonzero({4, 10, 3}, gen, t);
    const Tensor gx = x.to(kGPU);
    const Tensor idx = Tensor::from_vector(std::vector<int64_t>{9, 0, 3, 3, 7, 9, 9}, {7});
    const Tensor gidx = idx.to(kGPU);
    const std::string d = dtype_name(t);
    check_equal(index_select(x, 1, idx), index_select(gx, 1, gidx), "index_select " + d);
    check_equal(index_select(x, 0, idx.slice(0, 1, 4)), index_select(gx, 0, gidx.slice(0, 1, 4)), "index_select axis 0 " + d);
    // Repeated indices: atomic adds in any order.
    const Tensor src = t == kInt64 ? Tensor::arange(4 * 7 * 3).reshape({4, 7, 3}) : nonzero({4, 7, 3}, gen, t);
    check_close(index_add({4, 10, 3}, 1, idx, src), index_add({4, 10, 3}, 1, gidx, src.to(kGPU)),
                rtol_of(t) * 4, atol_of(t) * 4, "index_add " + d);
    Tensor gi = Tensor::from_vector(std::vector<int64_t>(4 * 5 * 3, 0), {4, 5, 3});
    {
      Generator g2(11);
      const auto u = uniform({4 * 5 * 3}, 0, 10, g2, kFloat64).to_vector<double>();
      std::vector<int64_t> v(u.size());
      for (size_t k = 0; k < u.size(); ++k) v[k] = static_cast<int64_t>(u[k]);
      gi = Tensor::from_vector(v, {4, 5, 3});
    }
    check_equal(gather(x, 1, gi), gather(gx, 1, gi.to(kGPU)), "gather " + d);
    const Tensor ssrc = t == kInt64 ? Tensor::arange(60).reshape({4, 5, 3}) : nonzero({4, 5, 3}, gen, t);
    check_close(scatter_add({4, 10, 3}, 1, gi, ssrc), scatter_add({4, 10, 3}, 1, gi.to(kGPU), ssrc.to(kGPU)),
                rtol_of(t) * 4, atol_of(t) * 4, "scatter_add " + d);
  }
  // Out-of-range indices: the CPU's message, naming the index.
  const Tensor gx = Tensor::ones({5, 2}, kFloat32, kGPU);
  const Tensor bad = Tensor::from_vector(std::vector<int64_t>{1, 7, -1}, {3}).to(kGPU);
  test::check_error([&] { index_select(gx, 0, bad); }, {"index_select", "index 7", "[0, 5)"});
  test::check_error([&] { index_add({5, 2}, 0, bad, Tensor::ones({3, 2}, kFloat32, kGPU)); }, {"index_add", "index 7"});
  test::check_error([&] { index_select(gx, 0, Tensor::from_vector(std::vector<int64_t>{1}, {1})); },
                    {"index_select", "different devices"});
}

GPU_TEST_CASE(philox_numbers_equal_the_cpu) {
  // Uniform and Bernoulli draws are bit-identical; normals go through libdevice's log/sin/cos
  // (float32: identical after rounding in all but astronomically rare cases; float64: 1e-14).
  for (const Shape& shape : {Shape{1}, Shape{3}, Shape{5, 7}, Shape{1001}}) {
    for (DType t : {kFloat32, kFloat64}) {
      Generator c(1234), g(1234);
      c.reserve(5);  // a non-zero starting offset
      g.reserve(5);
      const std::string what = fmt::format("{} {}", shape_str(shape), dtype_name(t));
      check_equal(uniform(shape, -2, 3, c, t), uniform(shape, -2, 3, g, t, kGPU), "uniform " + what);
      check_equal(bernoulli(shape, 0.3, c, t), bernoulli(shape, 0.3, g, t, kGPU), "bernoulli " + what);
      const Tensor nc = normal(shape, 1, 2, c, t), ng = normal(shape, 1, 2, g, t, kGPU);
      if (t == kFloat32) check_close(nc, ng, 2.5e-7, 1e-30, "normal " + what);
      else check_close(nc, ng, 1e-14, 1e-14, "normal " + what);
      BOOST_TEST(c.offset() == g.offset());
    }
  }
}

GPU_TEST_CASE(autograd_backward_of_the_main_ops) {
  // A small attention-like graph run on both devices; every leaf's gradient is compared.
  Generator gen(10);
  const Tensor x0 = nonzero({2, 6, 8}, gen), w0 = mul_scalar(nonzero({8, 8}, gen), 0.3);
  const Tensor b0 = nonzero({8}, gen), g0 = nonzero({8}, gen), beta0 = nonzero({8}, gen);
  const Tensor emb0 = nonzero({11, 8}, gen);
  const Tensor tokens = Tensor::from_vector(std::vector<int64_t>{3, 0, 10, 3, 7, 1}, {6});
  struct Grads { Tensor x, w, b, g, beta, emb; double loss; };
  auto run = [&](Device dev) {
    Variable x(x0.to(dev), true), w(w0.to(dev), true), b(b0.to(dev), true);
    Variable g(g0.to(dev), true), beta(beta0.to(dev), true), emb(emb0.to(dev), true);
    Variable e = index_select(emb, 0, tokens.to(dev));                 // [6, 8]
    Variable h = gelu(matmul(x + e, w) + b);                           // [2, 6, 8]
    Variable n = layer_norm(h, g, beta, 1e-5);                         // [2, 6, 8]
    Variable scores = matmul(n, transpose(n, 1, 2)) * 0.25;            // [2, 6, 6]
    Variable att = matmul(softmax(scores, -1), n);                     // [2, 6, 8]
    Variable out = log_softmax(tanh(att) + sigmoid(n) * x, -1);        // [2, 6, 8]
    Variable loss = mean(sum(out * out, {2})) + mean(amax(att, {1}));
    loss.backward();
    return Grads{x.grad(), w.grad(), b.grad(), g.grad(), beta.grad(), emb.grad(), loss.item()};
  };
  const Grads c = run(kCPU), d = run(kGPU);
  BOOST_TEST(std::abs(c.loss - d.loss) <= 1e-5 * std::abs(c.loss));
  check_close(c.x, d.x, 1e-4, 1e-5, "dx");
  check_close(c.w, d.w, 1e-4, 1e-5, "dw");
  check_close(c.b, d.b, 1e-4, 1e-5, "db");
  check_close(c.g, d.g, 1e-4, 1e-5, "dgamma");
  check_close(c.beta, d.beta, 1e-4, 1e-5, "dbeta");
  check_close(c.emb, d.emb, 1e-4, 1e-5, "dembedding");
}

GPU_TEST_CASE(fused_adam_kernel_matches_the_cpu_loop) {
  Generator gen(12);
  for (bool decoupled : {true, false}) {
    for (bool amsgrad : {false, true}) {
      const Tensor p0 = nonzero({37, 5}, gen);
      std::vector<Tensor> grads;
      for (int s = 0; s < 4; ++s) grads.push_back(nonzero({37, 5}, gen));
      auto train = [&](Device dev) {
        Variable p(p0.to(dev), true);
        std::unique_ptr<Adam> opt;
        if (decoupled) opt = std::make_unique<AdamW>(std::vector<Variable>{p}, AdamWOptions{.lr = 1e-2, .amsgrad = amsgrad});
        else opt = std::make_unique<Adam>(std::vector<Variable>{p}, AdamOptions{.lr = 1e-2, .weight_decay = 0.1, .amsgrad = amsgrad});
        for (const Tensor& g : grads) {
          opt->zero_grad();
          p.set_grad(g.to(dev));
          opt->step();
        }
        return p.value();
      };
      // The kernel may fuse multiply-adds the CPU rounds twice: a few float32 ulp.
      check_close(train(kCPU), train(kGPU), 1e-5, 1e-6,
                  fmt::format("adam decoupled {} amsgrad {}", decoupled, amsgrad));
    }
  }
  // The fused kernel directly, against the composite twin on the GPU.
  Tensor p = nonzero({1000}, gen).to(kGPU), g = nonzero({1000}, gen).to(kGPU);
  Tensor m = Tensor::zeros({1000}, kFloat32, kGPU), v = m.clone(), vmax = m.clone();
  Tensor p2 = p.clone(), m2 = m.clone(), v2 = v.clone(), vmax2 = vmax.clone();
  const AdamStepConfig cfg{1e-3, 0.9, 0.999, 1e-8, 0.01, true, true, 1};
  adam_update_fused(p, g, m, v, vmax, cfg);
  adam_update_composite(p2, g, m2, v2, vmax2, cfg);
  check_close(p2.to(kCPU), p, 1e-6, 1e-7, "fused vs composite on the GPU");
}

GPU_TEST_CASE(nonfinite_flags_on_the_device_match_the_cpu) {
  Generator gen(23);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::vector<Tensor> cpu_tensors;
  for (int i = 0; i < 6; ++i) cpu_tensors.push_back(nonzero({1000 + 37 * i}, gen, i % 2 ? kFloat64 : kFloat32));
  cpu_tensors[1].data<double>()[999] = nan;
  cpu_tensors[2].data<float>()[3] = static_cast<float>(-inf);
  cpu_tensors[5].data<double>()[0] = inf;
  std::vector<Tensor> gpu_tensors;
  for (const Tensor& t : cpu_tensors) gpu_tensors.push_back(t.to(kGPU));
  gpu_tensors.push_back(cpu_tensors[0]);  // a CPU tensor in the same list
  cpu_tensors.push_back(cpu_tensors[0]);
  const std::vector<char> expected{0, 1, 1, 0, 0, 1, 0};
  BOOST_TEST(nonfinite_flags(cpu_tensors) == expected, boost::test_tools::per_element());
  BOOST_TEST(nonfinite_flags(gpu_tensors) == expected, boost::test_tools::per_element());
}

GPU_TEST_CASE(caching_allocator_reuses_blocks) {
  cuda_empty_cache();
  auto step = [] {
    Tensor a = Tensor::ones({1000}, kFloat32, kGPU);
    Tensor b = Tensor::ones({257, 3}, kFloat64, kGPU);
    Tensor c = exp(a) + 1.0;
    Tensor big = Tensor::empty({3 << 20}, kFloat32, kGPU);
    return sum(c).item() + static_cast<double>(b.numel() + big.numel());
  };
  step();  // warm-up: fills the free lists
  const CudaMemoryStats before = cuda_memory_stats();
  for (int i = 0; i < 50; ++i) step();
  const CudaMemoryStats after = cuda_memory_stats();
  BOOST_TEST(after.device_mallocs == before.device_mallocs);  // steady state: no cudaMalloc
  BOOST_TEST(after.bytes_in_use == before.bytes_in_use);
  BOOST_TEST(after.blocks_cached > 0);
  cuda_empty_cache();
  const CudaMemoryStats emptied = cuda_memory_stats();
  BOOST_TEST(emptied.blocks_cached == 0);
  BOOST_TEST(emptied.device_frees > after.device_frees);
  BOOST_TEST(emptied.bytes_reserved < after.bytes_reserved);
}

GPU_TEST_CASE(device_timer_measures_queued_work) {
  // Events time the device's stream: one big matmul takes longer than an empty interval.
  Generator gen(31);
  const Tensor a = normal({2048, 2048}, 0, 1, gen).to(kGPU);
  DeviceTimer timer(kGPU);
  timer.start();
  timer.stop();
  const double empty = timer.elapsed_ms();
  timer.start();
  const Tensor c = matmul(a, a);
  timer.stop();
  const double busy = timer.elapsed_ms();
  BOOST_TEST(empty >= 0.0);
  BOOST_TEST(busy > empty, "matmul " << busy << " ms vs empty " << empty << " ms");
}

GPU_TEST_CASE(errors_name_the_op_and_the_devices) {
  const Tensor c = Tensor::ones({3});
  const Tensor g = Tensor::ones({3}, kFloat32, kGPU);
  test::check_error([&] { c + g; }, {"add", "cpu", "cuda:0"});
  test::check_error([&] { matmul(c.reshape({1, 3}), g.reshape({3, 1})); }, {"matmul", "different devices"});
  test::check_error([&] { Tensor gc = g.clone(); add_(gc, c); }, {"add_", "different devices"});
  test::check_error([&] { Tensor::ones({2}, kFloat32, Device{DeviceType::CUDA, 64}); }, {"cuda:64"});
  synchronize(kGPU);
}

BOOST_AUTO_TEST_SUITE_END()
