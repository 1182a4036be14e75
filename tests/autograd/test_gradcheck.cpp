// Gradcheck of every differentiable op in autograd/functions.h, data-driven over shapes (plain,
// broadcasting, non-contiguous transposed / sliced inputs) and over devices: the same cases run
// on the CPU and, in the gradcheck_ops_cuda suite, with fn and backward() on the GPU (reported
// as skipped, with the reason, where no GPU is usable).
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include "posgrad.h"
#include "tests/device_support.h"

using namespace posgrad;
namespace bdata = boost::unit_test::data;

namespace {

struct OpCase {
  std::string name;
  std::vector<Shape> shapes;  // input shapes
  GradcheckFn fn;
  bool positive = false;            // inputs drawn from [0.5, 2] (log, sqrt, div denominators)
  bool transposed_first = false;    // first input passed as a transposed (non-contiguous) view
};

std::ostream& operator<<(std::ostream& os, const OpCase& c) { return os << c.name; }

using V = std::vector<Variable>;

// A constant of a case (index, mask) on the device its inputs are on.
Tensor like(const Tensor& constant, const Variable& input) { return constant.to(input.value().device()); }

std::vector<OpCase> op_cases() {
  std::vector<OpCase> c;
  auto bin = [&](const std::string& name, auto f, bool positive = false) {
    c.push_back({name + " same", {{3, 4}, {3, 4}}, [f](const V& v) { return f(v[0], v[1]); }, positive});
    c.push_back({name + " broadcast", {{2, 3, 4}, {3, 1}}, [f](const V& v) { return f(v[0], v[1]); }, positive});
    c.push_back({name + " broadcast-left", {{4}, {2, 3, 4}}, [f](const V& v) { return f(v[0], v[1]); }, positive});
    c.push_back({name + " transposed", {{4, 3}, {3, 4}}, [f](const V& v) { return f(v[0], v[1]); }, positive, true});
  };
  bin("add", [](const Variable& a, const Variable& b) { return a + b; });
  bin("sub", [](const Variable& a, const Variable& b) { return a - b; });
  bin("mul", [](const Variable& a, const Variable& b) { return a * b; });
  bin("div", [](const Variable& a, const Variable& b) { return a / b; }, true);
  bin("maximum", [](const Variable& a, const Variable& b) { return maximum(a, b); });
  bin("minimum", [](const Variable& a, const Variable& b) { return minimum(a, b); });

  auto un = [&](const std::string& name, auto f, bool positive = false) {
    c.push_back({name, {{3, 5}}, [f](const V& v) { return f(v[0]); }, positive});
    c.push_back({name + " transposed", {{5, 3}}, [f](const V& v) { return f(v[0]); }, positive, true});
  };
  un("neg", [](const Variable& x) { return -x; });
  un("exp", [](const Variable& x) { return exp(x); });
  un("log", [](const Variable& x) { return log(x); }, true);
  un("sqrt", [](const Variable& x) { return sqrt(x); }, true);
  un("abs", [](const Variable& x) { return abs(x); });
  un("sin", [](const Variable& x) { return sin(x); });
  un("cos", [](const Variable& x) { return cos(x); });
  un("tanh", [](const Variable& x) { return tanh(x); });
  un("sigmoid", [](const Variable& x) { return sigmoid(x); });
  un("relu", [](const Variable& x) { return relu(x); });
  un("gelu", [](const Variable& x) { return gelu(x); });
  un("square", [](const Variable& x) { return square(x); });
  un("add_scalar", [](const Variable& x) { return x + 1.5; });
  un("mul_scalar", [](const Variable& x) { return x * -2.5; });
  un("pow_scalar", [](const Variable& x) { return pow_scalar(x, 1.7); }, true);
  un("clamp", [](const Variable& x) { return clamp(x, -0.4, 0.3); });
  un("rsub_scalar", [](const Variable& x) { return 1.0 - x; });

  // Shape ops.
  un("reshape", [](const Variable& x) { return reshape(x, {15}); });
  un("permute", [](const Variable& x) { return permute(x, {1, 0}); });
  c.push_back({"permute 3d", {{2, 3, 4}}, [](const V& v) { return permute(v[0], {2, 0, 1}); }});
  c.push_back({"transpose", {{2, 3, 4}}, [](const V& v) { return transpose(v[0], 0, 2); }});
  c.push_back({"slice step", {{7, 3}}, [](const V& v) { return slice(v[0], 0, 1, 6, 2); }});
  c.push_back({"narrow", {{3, 6}}, [](const V& v) { return narrow(v[0], 1, 2, 3); }});
  c.push_back({"select", {{3, 6}}, [](const V& v) { return select(v[0], 0, -1); }});
  c.push_back({"expand", {{3, 1}}, [](const V& v) { return expand(v[0], {2, 3, 4}); }});
  c.push_back({"squeeze/unsqueeze", {{3, 1, 4}}, [](const V& v) { return unsqueeze(squeeze(v[0], 1), 0); }});
  c.push_back({"flatten", {{2, 3, 4}}, [](const V& v) { return flatten(v[0], 1); }});
  c.push_back({"contiguous", {{4, 3}}, [](const V& v) { return contiguous(v[0]); }, false, true});
  c.push_back({"cat", {{2, 3}, {4, 3}}, [](const V& v) { return cat({v[0], v[1]}, 0); }});
  c.push_back({"cat axis1", {{2, 3}, {2, 1}}, [](const V& v) { return cat({v[0], v[1]}, -1); }});
  c.push_back({"stack", {{2, 3}, {2, 3}}, [](const V& v) { return stack({v[0], v[1]}, 1); }});

  // Reductions.
  c.push_back({"sum all", {{3, 4}}, [](const V& v) { return sum(v[0]); }});
  c.push_back({"sum axes", {{2, 3, 4}}, [](const V& v) { return sum(v[0], {0, 2}); }});
  c.push_back({"sum keepdim transposed", {{4, 3}}, [](const V& v) { return sum(v[0], {1}, true); }, false, true});
  c.push_back({"mean", {{2, 3, 4}}, [](const V& v) { return mean(v[0], {-1}); }});
  c.push_back({"amax", {{3, 5}}, [](const V& v) { return amax(v[0], {1}); }});
  c.push_back({"amin", {{3, 5}}, [](const V& v) { return amin(v[0], {0}, true); }});
  c.push_back({"var unbiased", {{3, 5}}, [](const V& v) { return var(v[0], {1}); }});
  c.push_back({"var biased all", {{3, 5}}, [](const V& v) { return var(v[0], {}, false, 0); }});

  // Linear algebra and normalisation.
  c.push_back({"matmul", {{3, 4}, {4, 5}}, [](const V& v) { return matmul(v[0], v[1]); }});
  c.push_back({"matmul batched broadcast", {{2, 3, 4}, {4, 5}}, [](const V& v) { return matmul(v[0], v[1]); }});
  c.push_back({"matmul transposed", {{4, 3}, {4, 5}}, [](const V& v) { return matmul(v[0], v[1]); }, false, true});
  c.push_back({"matmul 4d", {{2, 2, 3, 4}, {2, 2, 4, 3}}, [](const V& v) { return matmul(v[0], v[1]); }});
  c.push_back({"softmax", {{3, 5}}, [](const V& v) { return softmax(v[0], -1); }});
  c.push_back({"softmax axis0", {{3, 5}}, [](const V& v) { return softmax(v[0], 0); }});
  c.push_back({"log_softmax", {{2, 3, 5}}, [](const V& v) { return log_softmax(v[0], 1); }});
  c.push_back({"softmax transposed", {{5, 3}}, [](const V& v) { return softmax(v[0], -1); }, false, true});
  c.push_back({"layer_norm affine", {{3, 6}, {6}, {6}}, [](const V& v) { return layer_norm(v[0], v[1], v[2], 1e-5); }});
  c.push_back({"layer_norm plain", {{2, 3, 6}}, [](const V& v) { return layer_norm(v[0], Variable(), Variable(), 1e-5); }});

  // Indexing and masking (indices and masks are constants).
  const Tensor idx = Tensor::from_vector<int64_t>({2, 0, 2, 1}, {4});
  c.push_back({"index_select", {{3, 5}}, [idx](const V& v) { return index_select(v[0], 0, like(idx, v[0])); }});
  c.push_back({"index_select axis1", {{2, 3, 2}}, [idx](const V& v) { return index_select(v[0], 1, like(idx, v[0])); }});
  const Tensor gidx = Tensor::from_vector<int64_t>({0, 2, 2, 1, 1, 0}, {2, 3});
  c.push_back({"gather", {{2, 4}}, [gidx](const V& v) { return gather(v[0], 1, like(gidx, v[0])); }});
  c.push_back({"scatter_add", {{2, 3}}, [gidx](const V& v) { return scatter_add({2, 4}, 1, like(gidx, v[0]), v[0]); }});
  c.push_back({"index_add", {{4, 2}}, [idx](const V& v) { return index_add({3, 2}, 0, like(idx, v[0]), v[0]); }});
  const Tensor mask = Tensor::from_vector<double>({1, 0, 0, 1, 0}, {1, 5});
  c.push_back({"masked_fill", {{3, 5}}, [mask](const V& v) { return masked_fill(v[0], like(mask, v[0]), -3.0); }});
  c.push_back({"where", {{3, 5}, {5}}, [mask](const V& v) { return where(like(mask, v[0]), v[0], v[1]); }});
  return c;
}

// The case's inputs (CPU float64, random, the first one transposed when the case says so).
std::vector<Tensor> inputs_of(const OpCase& op) {
  Generator gen(7);
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < op.shapes.size(); ++i) {
    Tensor t = op.positive ? uniform(op.shapes[i], 0.5, 2.0, gen, kFloat64) : normal(op.shapes[i], 0.0, 1.0, gen, kFloat64);
    if (i == 0 && op.transposed_first) t = t.transpose(0, 1);  // a non-contiguous view
    inputs.push_back(t);
  }
  return inputs;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gradcheck_ops)

BOOST_DATA_TEST_CASE(every_op_passes_gradcheck, bdata::make(op_cases()), op) {
  const GradcheckResult r = gradcheck(op.fn, inputs_of(op));
  BOOST_TEST_INFO("op " << op.name << ": " << r.message);
  BOOST_TEST(r.ok);
}

BOOST_AUTO_TEST_CASE(gradcheck_detects_a_wrong_gradient) {
  // An op whose backward is deliberately off by a factor 2 must fail the check.
  auto wrong = [](const V& v) {
    Tensor x = v[0].value();
    return record("wrong", mul_scalar(x, 3.0), {v[0]},
                  [](const Tensor& g, const std::vector<bool>&) { return std::vector<Tensor>{mul_scalar(g, 6.0)}; });
  };
  Generator gen(1);
  const GradcheckResult r = gradcheck(wrong, {normal({3}, 0, 1, gen, kFloat64)});
  BOOST_TEST(!r.ok);
  BOOST_TEST(r.message.find("analytic") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(gradcheck_on_a_missing_gpu_is_a_clear_error,
                     *boost::unit_test::precondition(posgrad::test::GpuAbsent())) {
  GradcheckOptions options;
  options.device = posgrad::test::kGPU;
  Generator gen(1);
  BOOST_CHECK_EXCEPTION(gradcheck([](const V& v) { return v[0] * 2.0; }, {normal({3}, 0, 1, gen, kFloat64)}, options),
                        Error, [](const Error& e) {
                          return std::string(e.what()).find("CUDA cannot be used") != std::string::npos;
                        });
}

BOOST_AUTO_TEST_SUITE(gradcheck_ops_cuda, *boost::unit_test::precondition(posgrad::test::GpuPresent()))

BOOST_DATA_TEST_CASE(every_op_passes_gradcheck_on_the_gpu, bdata::make(op_cases()), op) {
  GradcheckOptions options;
  options.device = posgrad::test::kGPU;
  const GradcheckResult r = gradcheck(op.fn, inputs_of(op), options);
  BOOST_TEST_INFO("op " << op.name << " on " << options.device.str() << ": " << r.message);
  BOOST_TEST(r.ok);
}

BOOST_AUTO_TEST_SUITE_END()
