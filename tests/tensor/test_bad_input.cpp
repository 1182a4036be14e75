// Bad input at the edges of the API: every public op of tensor/ops.h, the differentiable ops of
// autograd/functions.h and the losses of nn/losses.h, called with mismatched shapes, wrong dtypes
// (int64 where float is needed, float32 with float64), undefined tensors and out-of-range axes
// or indices. Each row is one op and one bad case, one line: the call must throw posgrad::Error
// whose message STARTS with the op's name and contains the named operand descriptions (shape
// and dtype, e.g. "float32[2, 3]"). Another exception type, no exception at all (a silent
// result, possibly NaN) or a message without the op or the operands fails the row.
//
// Devices: without a GPU a CUDA tensor cannot be made, so the device-mismatch column runs only
// where cuda_available() (suite bad_input_devices, reported as skipped here); the CPU-only check
// is that asking for a CUDA tensor is itself a clear Error.
//
// Deliberately not here: the values of correct calls (tests/tensor/test_ops.cpp and the
// gradchecks of tests/autograd/ cover those).
#include <boost/test/unit_test.hpp>

#include <functional>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "nn/losses.h"
#include "tensor/device.h"
#include "tensor/ops.h"
#include "tests/device_support.h"

using namespace posgrad;

namespace {

struct BadCall {
  std::string op;                    // the message must start with this
  std::string bad;                   // what is wrong, for the report
  std::function<void()> call;
  std::vector<std::string> names;    // operand descriptions the message must contain
};

// Runs every row; a failing row reports its op, case and the message it got.
void run_table(const std::vector<BadCall>& rows) {
  for (const BadCall& row : rows) {
    BOOST_TEST_CONTEXT(row.op << " / " << row.bad) {
      try {
        row.call();
        BOOST_ERROR("no error was raised");
      } catch (const Error& e) {
        const std::string m = e.what();
        BOOST_TEST(m.rfind(row.op, 0) == 0, "message \"" << m << "\" does not start with the op name");
        for (const std::string& n : row.names)
          BOOST_TEST(m.find(n) != std::string::npos, "message \"" << m << "\" lacks \"" << n << "\"");
      } catch (const std::exception& e) {
        BOOST_ERROR("threw a " << typeid(e).name() << " instead of posgrad::Error: " << e.what());
      }
    }
  }
}

// Operands: F float32, D float64, I int64 (values are irrelevant: every call must fail).
Tensor F(const Shape& s) { return Tensor::ones(s, kFloat32); }
Tensor D(const Shape& s) { return Tensor::ones(s, kFloat64); }
Tensor I(const Shape& s) { return Tensor::zeros(s, kInt64); }
Variable VF(const Shape& s) { return Variable(F(s), true); }
Variable VD(const Shape& s) { return Variable(D(s), true); }
const Tensor kUndefined;

const std::string f23 = "float32[2, 3]", d23 = "float64[2, 3]", i23 = "int64[2, 3]";

}  // namespace

BOOST_AUTO_TEST_SUITE(bad_input)

BOOST_AUTO_TEST_CASE(tensor_ops) {
  run_table({
      // ---------------------------------------------------------------- unary: int64 where float is needed
      {"exp", "int64", [] { exp(I({2, 3})); }, {i23}},
      {"log", "int64", [] { log(I({2, 3})); }, {i23}},
      {"sqrt", "int64", [] { sqrt(I({2, 3})); }, {i23}},
      {"rsqrt", "int64", [] { rsqrt(I({2, 3})); }, {i23}},
      {"sin", "int64", [] { sin(I({2, 3})); }, {i23}},
      {"cos", "int64", [] { cos(I({2, 3})); }, {i23}},
      {"tanh", "int64", [] { tanh(I({2, 3})); }, {i23}},
      {"sigmoid", "int64", [] { sigmoid(I({2, 3})); }, {i23}},
      {"relu", "int64", [] { relu(I({2, 3})); }, {i23}},
      {"gelu", "int64", [] { gelu(I({2, 3})); }, {i23}},
      {"square", "int64", [] { square(I({2, 3})); }, {i23}},
      {"reciprocal", "int64", [] { reciprocal(I({2, 3})); }, {i23}},
      {"pow_scalar", "int64", [] { pow_scalar(I({2, 3}), 2.0); }, {i23}},
      {"exp", "undefined", [] { exp(kUndefined); }, {"undefined"}},
      // ---------------------------------------------------------------- binary: shapes, float32 with float64, int64 with float32
      {"add", "shapes", [] { add(F({2, 3}), F({4})); }, {"[2, 3]", "[4]"}},
      {"add", "f32+f64", [] { add(F({2, 3}), D({2, 3})); }, {f23, d23}},
      {"add", "i64+f32", [] { add(I({2, 3}), F({2, 3})); }, {i23, f23}},
      {"sub", "shapes", [] { sub(F({2, 3}), F({4})); }, {"[2, 3]", "[4]"}},
      {"sub", "f32-f64", [] { sub(F({2, 3}), D({2, 3})); }, {f23, d23}},
      {"sub", "i64-f32", [] { sub(I({2, 3}), F({2, 3})); }, {i23, f23}},
      {"mul", "shapes", [] { mul(F({2, 3}), F({4})); }, {"[2, 3]", "[4]"}},
      {"mul", "f32*f64", [] { mul(F({2, 3}), D({2, 3})); }, {f23, d23}},
      {"mul", "i64*f32", [] { mul(I({2, 3}), F({2, 3})); }, {i23, f23}},
      {"div", "shapes", [] { div(F({2, 3}), F({4})); }, {"[2, 3]", "[4]"}},
      {"div", "f32/f64", [] { div(F({2, 3}), D({2, 3})); }, {f23, d23}},
      {"div", "i64/f32", [] { div(I({2, 3}), F({2, 3})); }, {i23, f23}},
      {"pow", "shapes", [] { pow(F({2, 3}), F({4})); }, {"[2, 3]", "[4]"}},
      {"pow", "f32^f64", [] { pow(F({2, 3}), D({2, 3})); }, {f23, d23}},
      {"pow", "i64^f32", [] { pow(I({2, 3}), F({2, 3})); }, {i23, f23}},
      {"maximum", "shapes", [] { maximum(F({2, 3}), F({4})); }, {"[2, 3]", "[4]"}},
      {"maximum", "f32,f64", [] { maximum(F({2, 3}), D({2, 3})); }, {f23, d23}},
      {"minimum", "shapes", [] { minimum(F({2, 3}), F({4})); }, {"[2, 3]", "[4]"}},
      {"minimum", "f32,f64", [] { minimum(F({2, 3}), D({2, 3})); }, {f23, d23}},
      {"eq", "shapes", [] { eq(F({2, 3}), F({4})); }, {"[2, 3]", "[4]"}},
      {"eq", "f32,f64", [] { eq(F({2, 3}), D({2, 3})); }, {f23, d23}},
      {"ne", "shapes", [] { ne(F({2, 3}), F({4})); }, {"[2, 3]", "[4]"}},
      {"ne", "f32,f64", [] { ne(F({2, 3}), D({2, 3})); }, {f23, d23}},
      {"lt", "shapes", [] { lt(F({2, 3}), F({4})); }, {"[2, 3]", "[4]"}},
      {"lt", "f32,f64", [] { lt(F({2, 3}), D({2, 3})); }, {f23, d23}},
      {"le", "shapes", [] { le(F({2, 3}), F({4})); }, {"[2, 3]", "[4]"}},
      {"le", "f32,f64", [] { le(F({2, 3}), D({2, 3})); }, {f23, d23}},
      {"gt", "shapes", [] { gt(F({2, 3}), F({4})); }, {"[2, 3]", "[4]"}},
      {"gt", "f32,f64", [] { gt(F({2, 3}), D({2, 3})); }, {f23, d23}},
      {"ge", "shapes", [] { ge(F({2, 3}), F({4})); }, {"[2, 3]", "[4]"}},
      {"ge", "f32,f64", [] { ge(F({2, 3}), D({2, 3})); }, {f23, d23}},
      {"add", "undefined", [] { add(kUndefined, F({2, 3})); }, {"undefined"}},
      // ---------------------------------------------------------------- where, masked_fill, add_
      {"where", "cond shape", [] { where(F({4}), F({2, 3}), F({2, 3})); }, {"[4]", "[2, 3]"}},
      {"where", "f32,f64", [] { where(F({2, 3}), F({2, 3}), D({2, 3})); }, {f23, d23}},
      {"where", "undefined a", [] { where(F({2, 3}), kUndefined, F({2, 3})); }, {"undefined"}},
      {"where", "undefined b", [] { where(F({2, 3}), F({2, 3}), kUndefined); }, {"undefined"}},
      {"masked_fill", "mask shape", [] { masked_fill(F({2, 3}), F({4}), 0.0); }, {"[2, 3]", "[4]"}},
      {"masked_fill", "mask larger", [] { masked_fill(F({2, 3}), F({5, 2, 3}), 0.0); }, {f23, "float32[5, 2, 3]"}},
      {"masked_fill", "undefined mask", [] { masked_fill(F({2, 3}), kUndefined, 0.0); }, {"undefined"}},
      {"add_", "shapes", [] { Tensor d = F({2, 3}); add_(d, F({4})); }, {"[2, 3]", "[4]"}},
      {"add_", "src larger", [] { Tensor d = F({3}); add_(d, F({2, 3})); }, {"float32[3]", f23}},
      {"add_", "f32+=f64", [] { Tensor d = F({2, 3}); add_(d, D({2, 3})); }, {f23, d23}},
      // ---------------------------------------------------------------- reductions
      {"sum", "axis", [] { sum(F({2, 3}), {2}); }, {"axis 2", "[2, 3]"}},
      {"mean", "axis", [] { mean(F({2, 3}), {-3}); }, {"axis -3", "[2, 3]"}},
      {"mean", "int64", [] { mean(I({2, 3})); }, {i23}},
      {"var", "int64", [] { var(I({2, 3})); }, {i23}},
      {"var", "axis", [] { var(F({2, 3}), {5}); }, {"axis 5", "[2, 3]"}},
      {"amax", "axis", [] { amax(F({2, 3}), {2}); }, {"axis 2", "[2, 3]"}},
      {"amax", "empty axis", [] { amax(F({2, 0}), {1}); }, {"float32[2, 0]"}},
      {"amin", "repeated axis", [] { amin(F({2, 3}), {1, -1}); }, {"repeated", "[2, 3]"}},
      {"argmax", "axis", [] { argmax(F({2, 3}), 2); }, {"axis 2", "[2, 3]"}},
      {"argmax", "empty axis", [] { argmax(F({2, 0}), 1); }, {"float32[2, 0]"}},
      {"sum_to", "not a broadcast", [] { sum_to(F({2, 3}), {4}); }, {f23, "[4]"}},
      {"sum_to", "larger", [] { sum_to(F({3}), {2, 3}); }, {"float32[3]", "[2, 3]"}},
      {"sum", "undefined", [] { sum(kUndefined); }, {"undefined"}},
      // ---------------------------------------------------------------- matmul
      {"matmul", "inner sizes", [] { matmul(F({2, 3}), F({4, 5})); }, {f23, "float32[4, 5]"}},
      {"matmul", "f32@f64", [] { matmul(F({2, 3}), D({3, 2})); }, {f23, "float64[3, 2]"}},
      {"matmul", "int64", [] { matmul(I({2, 3}), I({3, 2})); }, {i23}},
      {"matmul", "1-D", [] { matmul(F({3}), F({3, 2})); }, {"float32[3]", "float32[3, 2]"}},
      {"matmul", "batch", [] { matmul(F({2, 2, 3}), F({3, 3, 4})); }, {"[2]", "[3]"}},
      // ---------------------------------------------------------------- softmax, layer_norm
      {"softmax", "int64", [] { softmax(I({2, 3})); }, {i23}},
      {"softmax", "axis", [] { softmax(F({2, 3}), 2); }, {"axis 2", "[2, 3]"}},
      {"log_softmax", "int64", [] { log_softmax(I({2, 3})); }, {i23}},
      {"log_softmax", "axis", [] { log_softmax(F({2, 3}), -3); }, {"axis -3", "[2, 3]"}},
      {"softmax_backward", "shapes", [] { softmax_backward(F({2, 3}), F({3, 2}), -1, false); }, {f23, "float32[3, 2]"}},
      {"softmax_backward", "f32,f64", [] { softmax_backward(F({2, 3}), D({2, 3}), -1, true); }, {f23, d23}},
      {"softmax_backward", "undefined", [] { softmax_backward(kUndefined, kUndefined, -1, false); }, {"undefined"}},
      {"layer_norm", "weight size", [] { layer_norm(F({2, 3}), F({4}), F({3}), 1e-5); }, {"float32[4]", f23}},
      {"layer_norm", "weight f64", [] { layer_norm(F({2, 3}), D({3}), D({3}), 1e-5); }, {"float64[3]", f23}},
      {"layer_norm", "int64", [] { layer_norm(I({2, 3}), kUndefined, kUndefined, 1e-5); }, {i23}},
      {"layer_norm", "0-D", [] { layer_norm(F({}), kUndefined, kUndefined, 1e-5); }, {"float32[]"}},
      {"layer_norm_backward", "dy shape", [] {
         auto r = layer_norm(F({2, 3}), kUndefined, kUndefined, 1e-5);
         layer_norm_backward(F({3, 2}), F({2, 3}), kUndefined, r.mean, r.rstd); }, {"float32[3, 2]", f23}},
      {"layer_norm_backward", "rows", [] {
         layer_norm_backward(F({2, 3}), F({2, 3}), kUndefined, F({5}), F({5})); }, {"float32[5]", f23}},
      {"layer_norm_backward", "dy f64", [] {
         auto r = layer_norm(F({2, 3}), kUndefined, kUndefined, 1e-5);
         layer_norm_backward(D({2, 3}), F({2, 3}), kUndefined, r.mean, r.rstd); }, {d23, f23}},
      // ---------------------------------------------------------------- indexing
      {"index_select", "float index", [] { index_select(F({2, 3}), 0, F({2})); }, {"float32[2]"}},
      {"index_select", "axis", [] { index_select(F({2, 3}), 2, I({2})); }, {"axis 2", "[2, 3]"}},
      {"index_select", "index range", [] { index_select(F({2, 3}), 0, Tensor::full({1}, 7, kInt64)); }, {"index 7", "[0, 2)"}},
      {"index_add", "float index", [] { index_add({2, 3}, 0, F({2}), F({2, 3})); }, {"float32[2]"}},
      {"index_add", "source size", [] { index_add({2, 3}, 0, I({2}), F({3, 3})); }, {"float32[3, 3]", "int64[2]", "[2, 3]"}},
      {"index_add", "undefined source", [] { index_add({2, 3}, 0, I({2}), kUndefined); }, {"undefined"}},
      {"index_add", "index range", [] { index_add({2, 3}, 0, Tensor::full({1}, -1, kInt64), F({1, 3})); }, {"index -1", "[0, 2)"}},
      {"gather", "float index", [] { gather(F({2, 3}), 1, F({2, 3})); }, {f23}},
      {"gather", "index rank", [] { gather(F({2, 3}), 1, I({2})); }, {"int64[2]", f23}},
      {"gather", "index size", [] { gather(F({2, 3}), 1, I({3, 3})); }, {"int64[3, 3]", f23}},
      {"gather", "index range", [] { gather(F({2, 3}), 1, Tensor::full({2, 1}, 3, kInt64)); }, {"index 3", "[0, 3)"}},
      {"scatter_add", "float index", [] { scatter_add({2, 3}, 1, F({2, 3}), F({2, 3})); }, {f23}},
      {"scatter_add", "index vs source", [] { scatter_add({2, 3}, 1, I({2, 3}), F({2, 2})); }, {i23, "float32[2, 2]"}},
      {"scatter_add", "index rank", [] { scatter_add({2, 3}, 1, I({2, 3, 4}), F({2, 3, 4})); }, {"int64[2, 3, 4]", "[2, 3]"}},
      {"scatter_add", "index size", [] { scatter_add({2, 3}, 0, I({2, 1}), F({2, 1})); }, {"int64[2, 1]", "[2, 3]"}},
      {"scatter_add", "undefined source", [] { scatter_add({2, 3}, 1, I({2, 3}), kUndefined); }, {"undefined"}},
      // ---------------------------------------------------------------- joining
      {"cat", "ranks", [] { cat(std::vector<Tensor>{F({2, 3}), F({3})}, 0); }, {f23, "float32[3]"}},
      {"cat", "sizes", [] { cat(std::vector<Tensor>{F({2, 3}), F({2, 4})}, 0); }, {f23, "float32[2, 4]"}},
      {"cat", "f32,f64", [] { cat(std::vector<Tensor>{F({2, 3}), D({2, 3})}, 0); }, {f23, d23}},
      {"cat", "axis", [] { cat(std::vector<Tensor>{F({2, 3}), F({2, 3})}, 2); }, {"axis 2", "[2, 3]"}},
      {"cat", "empty list", [] { cat(std::vector<Tensor>{}, 0); }, {"no tensors"}},
      {"cat", "undefined", [] { cat(std::vector<Tensor>{F({2, 3}), kUndefined}, 0); }, {"undefined"}},
      {"stack", "shapes", [] { stack(std::vector<Tensor>{F({2, 3}), F({3, 2})}, 0); }, {f23, "float32[3, 2]"}},
      {"stack", "f32,f64", [] { stack(std::vector<Tensor>{F({2, 3}), D({2, 3})}, 0); }, {f23, d23}},
      {"stack", "empty list", [] { stack(std::vector<Tensor>{}, 0); }, {"no tensors"}},
      // ---------------------------------------------------------------- random
      {"uniform", "int64", [] { Generator g(1); uniform({2, 3}, 0, 1, g, kInt64); }, {"int64"}},
      {"uniform", "lo > hi", [] { Generator g(1); uniform({2, 3}, 2, 1, g); }, {"2", "1"}},
      {"normal", "int64", [] { Generator g(1); normal({2, 3}, 0, 1, g, kInt64); }, {"int64"}},
      {"normal", "stddev < 0", [] { Generator g(1); normal({2, 3}, 0, -1, g); }, {"-1"}},
      {"bernoulli", "int64", [] { Generator g(1); bernoulli({2, 3}, 0.5, g, kInt64); }, {"int64"}},
      {"bernoulli", "p > 1", [] { Generator g(1); bernoulli({2, 3}, 1.5, g); }, {"1.5"}},
      {"randperm", "n < 0", [] { Generator g(1); randperm(-3, g); }, {"-3"}},
  });
}

BOOST_AUTO_TEST_CASE(autograd_ops) {
  run_table({
      // ---------------------------------------------------------------- elementwise
      {"add", "shapes", [] { add(VF({2, 3}), VF({4})); }, {"[2, 3]", "[4]"}},
      {"add", "f32+f64", [] { add(VF({2, 3}), VD({2, 3})); }, {f23, d23}},
      {"sub", "shapes", [] { sub(VF({2, 3}), VF({4})); }, {"[2, 3]", "[4]"}},
      {"sub", "f32-f64", [] { sub(VF({2, 3}), VD({2, 3})); }, {f23, d23}},
      {"mul", "shapes", [] { mul(VF({2, 3}), VF({4})); }, {"[2, 3]", "[4]"}},
      {"mul", "i64*f32", [] { mul(Variable(I({2, 3})), VF({2, 3})); }, {i23, f23}},
      {"div", "shapes", [] { div(VF({2, 3}), VF({4})); }, {"[2, 3]", "[4]"}},
      {"div", "f32/f64", [] { div(VF({2, 3}), VD({2, 3})); }, {f23, d23}},
      {"maximum", "shapes", [] { maximum(VF({2, 3}), VF({4})); }, {"[2, 3]", "[4]"}},
      {"minimum", "f32,f64", [] { minimum(VF({2, 3}), VD({2, 3})); }, {f23, d23}},
      {"exp", "int64", [] { exp(Variable(I({2, 3}))); }, {i23}},
      {"log", "int64", [] { log(Variable(I({2, 3}))); }, {i23}},
      {"sqrt", "int64", [] { sqrt(Variable(I({2, 3}))); }, {i23}},
      {"sin", "int64", [] { sin(Variable(I({2, 3}))); }, {i23}},
      {"cos", "int64", [] { cos(Variable(I({2, 3}))); }, {i23}},
      {"tanh", "int64", [] { tanh(Variable(I({2, 3}))); }, {i23}},
      {"sigmoid", "int64", [] { sigmoid(Variable(I({2, 3}))); }, {i23}},
      {"relu", "int64", [] { relu(Variable(I({2, 3}))); }, {i23}},
      {"gelu", "int64", [] { gelu(Variable(I({2, 3}))); }, {i23}},
      {"square", "int64", [] { square(Variable(I({2, 3}))); }, {i23}},
      {"pow_scalar", "int64", [] { pow_scalar(Variable(I({2, 3})), 2.0); }, {i23}},
      {"where", "cond shape", [] { where(F({4}), VF({2, 3}), VF({2, 3})); }, {"[4]", "[2, 3]"}},
      {"where", "f32,f64", [] { where(F({2, 3}), VF({2, 3}), VD({2, 3})); }, {f23, d23}},
      {"masked_fill", "mask shape", [] { masked_fill(VF({2, 3}), F({4}), 0.0); }, {"[2, 3]", "[4]"}},
      // ---------------------------------------------------------------- shape
      {"reshape", "numel", [] { reshape(VF({2, 3}), {4}); }, {"[2, 3]", "[4]"}},
      {"permute", "order length", [] { permute(VF({2, 3}), {0}); }, {"[0]", f23}},
      {"permute", "repeated axis", [] { permute(VF({2, 3}), {0, 0}); }, {"repeated", "[2, 3]"}},
      {"transpose", "axis", [] { transpose(VF({2, 3}), 0, 2); }, {"axis 2", "[2, 3]"}},
      {"slice", "axis", [] { slice(VF({2, 3}), 2, 0, 1); }, {"axis 2", "[2, 3]"}},
      {"slice", "step", [] { slice(VF({2, 3}), 1, 0, 3, 0); }, {"step", f23}},
      {"narrow", "range", [] { narrow(VF({2, 3}), 1, 2, 2); }, {"[2, 4)", f23}},
      {"select", "index", [] { select(VF({2, 3}), 0, 2); }, {"index 2", f23}},
      {"select", "negative index", [] { select(VF({2, 3}), 1, -4); }, {"index -4", f23}},
      {"select", "axis", [] { select(VF({2, 3}), 2, 0); }, {"axis 2", "[2, 3]"}},
      {"expand", "size", [] { expand(VF({2, 3}), {2, 4}); }, {f23, "[2, 4]"}},
      {"expand", "fewer axes", [] { expand(VF({2, 3}), {3}); }, {f23, "[3]"}},
      {"squeeze", "axis", [] { squeeze(VF({2, 3}), 2); }, {"axis 2", "[2, 3]"}},
      {"unsqueeze", "axis", [] { unsqueeze(VF({2, 3}), 4); }, {"axis 4", "[2, 3]"}},
      {"flatten", "axis", [] { flatten(VF({2, 3}), 3); }, {"axis 3", "[2, 3]"}},
      {"cat", "ranks", [] { cat(std::vector<Variable>{VF({2, 3}), VF({3})}, 1); }, {f23, "float32[3]"}},
      {"cat", "sizes", [] { cat(std::vector<Variable>{VF({2, 3}), VF({2, 4})}, 0); }, {f23, "float32[2, 4]"}},
      {"cat", "f32,f64", [] { cat(std::vector<Variable>{VF({2, 3}), VD({2, 3})}, 0); }, {f23, d23}},
      {"cat", "axis", [] { cat(std::vector<Variable>{VF({2, 3}), VF({2, 3})}, 2); }, {"axis 2", "[2, 3]"}},
      {"cat", "empty list", [] { cat(std::vector<Variable>{}, 0); }, {"no tensors"}},
      {"stack", "shapes", [] { stack(std::vector<Variable>{VF({2, 3}), VF({3, 2})}, 0); }, {f23, "float32[3, 2]"}},
      {"stack", "f32,f64", [] { stack(std::vector<Variable>{VF({2, 3}), VD({2, 3})}, 0); }, {f23, d23}},
      {"stack", "axis", [] { stack(std::vector<Variable>{VF({2, 3}), VF({2, 3})}, 4); }, {"axis 4", "[2, 3]"}},
      // ---------------------------------------------------------------- reductions
      {"sum", "axis", [] { sum(VF({2, 3}), {2}); }, {"axis 2", "[2, 3]"}},
      {"mean", "axis", [] { mean(VF({2, 3}), {-3}); }, {"axis -3", "[2, 3]"}},
      {"mean", "int64", [] { mean(Variable(I({2, 3}))); }, {i23}},
      {"amax", "axis", [] { amax(VF({2, 3}), {2}); }, {"axis 2", "[2, 3]"}},
      {"amin", "axis", [] { amin(VF({2, 3}), {2}); }, {"axis 2", "[2, 3]"}},
      {"var", "axis", [] { var(VF({2, 3}), {2}); }, {"axis 2", "[2, 3]"}},
      // ---------------------------------------------------------------- linear algebra, nn
      {"matmul", "inner sizes", [] { matmul(VF({2, 3}), VF({4, 5})); }, {f23, "float32[4, 5]"}},
      {"matmul", "f32@f64", [] { matmul(VF({2, 3}), VD({3, 2})); }, {f23, "float64[3, 2]"}},
      {"softmax", "int64", [] { softmax(Variable(I({2, 3}))); }, {i23}},
      {"softmax", "axis", [] { softmax(VF({2, 3}), 2); }, {"axis 2", "[2, 3]"}},
      {"log_softmax", "axis", [] { log_softmax(VF({2, 3}), 2); }, {"axis 2", "[2, 3]"}},
      {"layer_norm", "weight size", [] { layer_norm(VF({2, 3}), VF({4}), VF({4}), 1e-5); }, {"float32[4]", f23}},
      {"layer_norm", "weight without bias", [] { layer_norm(VF({2, 3}), VF({3}), Variable(), 1e-5); }, {"bias", f23}},
      {"layer_norm", "f32,f64", [] { layer_norm(VF({2, 3}), VD({3}), VD({3}), 1e-5); }, {"float64[3]", f23}},
      // ---------------------------------------------------------------- indexing
      {"index_select", "float index", [] { index_select(VF({2, 3}), 0, F({2})); }, {"float32[2]"}},
      {"index_select", "axis", [] { index_select(VF({2, 3}), 2, I({2})); }, {"axis 2", "[2, 3]"}},
      {"gather", "index rank", [] { gather(VF({2, 3}), 1, I({2})); }, {"int64[2]", f23}},
      {"gather", "axis", [] { gather(VF({2, 3}), 2, I({2, 3})); }, {"axis 2", "[2, 3]"}},
      {"scatter_add", "index vs source", [] { scatter_add({2, 3}, 1, I({2, 3}), VF({2, 2})); }, {i23, "float32[2, 2]"}},
      {"index_add", "source size", [] { index_add({2, 3}, 0, I({2}), VF({3, 3})); }, {"float32[3, 3]", "[2, 3]"}},
      {"index_add", "axis", [] { index_add({2, 3}, 2, I({2}), VF({2, 3})); }, {"axis 2", "[2, 3]"}},
      // ---------------------------------------------------------------- variables and backward
      {"Variable", "int64 requires_grad", [] { Variable v(I({2, 3}), true); }, {i23}},
      {"backward", "seed shape", [] { (VF({2, 3}) * 2.0).backward(F({3, 2})); }, {"float32[3, 2]", f23}},
      {"backward", "seed dtype", [] { (VF({2, 3}) * 2.0).backward(D({2, 3})); }, {d23, f23}},
      {"backward", "non-scalar", [] { (VF({2, 3}) * 2.0).backward(); }, {f23}},
  });
}

BOOST_AUTO_TEST_CASE(losses) {
  run_table({
      {"cross_entropy", "float targets", [] { cross_entropy(VF({2, 3}), F({2})); }, {"float32[2]"}},
      {"cross_entropy", "target shape", [] { cross_entropy(VF({2, 3}), I({3})); }, {"int64[3]", f23}},
      {"cross_entropy", "int64 logits", [] { cross_entropy(Variable(I({2, 3})), I({2})); }, {i23}},
      {"cross_entropy", "target range", [] { cross_entropy(VF({2, 3}), Tensor::full({2}, 3, kInt64)); }, {"target 3", "[0, 3)"}},
      {"nll_loss", "target shape", [] { nll_loss(VF({2, 3}), I({2, 3})); }, {i23, f23}},
      {"binary_cross_entropy", "shapes", [] { binary_cross_entropy(VF({2, 3}), VF({3})); }, {f23, "float32[3]"}},
      {"binary_cross_entropy", "f32,f64", [] { binary_cross_entropy(VF({2, 3}), VD({2, 3})); }, {f23, d23}},
      {"binary_cross_entropy", "probs > 1", [] { binary_cross_entropy(Variable(F({2, 3}) * 2.0), VF({2, 3})); }, {f23}},
      {"binary_cross_entropy_with_logits", "shapes", [] { binary_cross_entropy_with_logits(VF({2, 3}), VF({2})); }, {f23, "float32[2]"}},
      {"binary_cross_entropy_with_logits", "f32,f64", [] { binary_cross_entropy_with_logits(VF({2, 3}), VD({2, 3})); }, {f23, d23}},
      {"mse_loss", "shapes", [] { mse_loss(VF({2, 3}), VF({3, 2})); }, {f23, "float32[3, 2]"}},
      {"mse_loss", "f32,f64", [] { mse_loss(VF({2, 3}), VD({2, 3})); }, {f23, d23}},
      {"mse_loss", "int64", [] { mse_loss(Variable(I({2, 3})), VF({2, 3})); }, {i23}},
  });
}

// The CPU-only stand-in for the device column: a CUDA tensor cannot be made, and asking for one
// is a clear Error naming the device (never an abort).
BOOST_AUTO_TEST_CASE(cuda_tensor_without_a_gpu_is_a_clear_error, *boost::unit_test::precondition(test::GpuAbsent())) {
  try {
    F({2, 3}).to(Device::parse("cuda"));
    BOOST_ERROR("no error was raised");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("cuda:0") != std::string::npos, e.what());
  }
}

BOOST_AUTO_TEST_SUITE_END()

// Mismatched devices: only where a GPU can hold tensors (skipped, with the reason, elsewhere).
BOOST_AUTO_TEST_SUITE(bad_input_devices, *boost::unit_test::precondition(test::GpuPresent()))

BOOST_AUTO_TEST_CASE(cpu_with_cuda) {
  const std::string g23 = "float32[2, 3] on cuda:0";
  auto G = [](const Shape& s) { return F(s).to(test::kGPU); };
  run_table({
      {"add", "cpu+cuda", [&] { add(F({2, 3}), G({2, 3})); }, {f23, g23}},
      {"mul", "cpu*cuda", [&] { mul(F({2, 3}), G({2, 3})); }, {f23, g23}},
      {"where", "cpu,cuda", [&] { where(F({2, 3}), F({2, 3}), G({2, 3})); }, {f23, g23}},
      {"matmul", "cpu@cuda", [&] { matmul(F({2, 3}), G({3, 2})); }, {f23, "float32[3, 2] on cuda:0"}},
      {"cat", "cpu,cuda", [&] { cat(std::vector<Tensor>{F({2, 3}), G({2, 3})}, 0); }, {f23, g23}},
      {"index_select", "cuda index", [&] { index_select(F({2, 3}), 0, I({2}).to(test::kGPU)); }, {f23, "int64[2] on cuda:0"}},
      {"gather", "cuda index", [&] { gather(F({2, 3}), 1, I({2, 3}).to(test::kGPU)); }, {f23, "int64[2, 3] on cuda:0"}},
      {"layer_norm", "cuda weight", [&] { layer_norm(F({2, 3}), G({3}), G({3}), 1e-5); }, {f23, "float32[3] on cuda:0"}},
      {"add", "autograd cpu+cuda", [&] { add(VF({2, 3}), Variable(G({2, 3}), true)); }, {f23, g23}},
      {"cross_entropy", "cuda targets", [&] { cross_entropy(VF({2, 3}), I({2}).to(test::kGPU)); }, {f23, "int64[2] on cuda:0"}},
  });
}

BOOST_AUTO_TEST_SUITE_END()
