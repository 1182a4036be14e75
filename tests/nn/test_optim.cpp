// Optimizers (SGD, Adam, AdamW, Adagrad) against PyTorch trajectories, the fused Adam loop
// against its composite twin, the NaN/Inf guard, state export/import, gradient clipping and
// gradient accumulation.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>

#include "autograd/functions.h"
#include "nn/adagrad.h"
#include "nn/adam.h"
#include "nn/clip_grad.h"
#include "nn/grad_accumulation.h"
#include "nn/sgd.h"

using namespace posgrad;

namespace {

// The fixed problem of the PyTorch references: two parameters A [2, 3] and B [3], three steps
// with the gradients below; B has no gradient at the second step (it must be skipped: no state
// created, no step counted).
const std::vector<double> kA0 = {0.5, -1.0, 2.0, 0.25, 0.0, -0.75};
const std::vector<double> kB0 = {1.0, -2.0, 0.5};
const std::vector<std::vector<double>> kGA = {{0.1, -0.2, 0.3, -0.4, 0.5, -0.6},
                                              {1.0, 0.0, -1.0, 2.0, -0.5, 0.25},
                                              {-0.3, 0.3, 0.05, 0.0, 1.5, -2.0}};
const std::vector<std::vector<double>> kGB = {{0.2, -0.1, 0.0}, {}, {-1.0, 0.5, 0.3}};

Tensor make(const std::vector<double>& v, const Shape& shape, DType dtype) {
  return Tensor::from_vector(v, shape).to(dtype);
}

struct Trajectory {
  std::vector<double> a, b;
};

using MakeOptimizer = std::function<std::unique_ptr<Optimizer>(std::vector<Variable>)>;

Trajectory run_reference_problem(const MakeOptimizer& make_opt, DType dtype) {
  Variable a(make(kA0, {2, 3}, dtype), true);
  Variable b(make(kB0, {3}, dtype), true);
  auto opt = make_opt({a, b});
  for (size_t t = 0; t < 3; ++t) {
    a.set_grad(make(kGA[t], {2, 3}, dtype));
    if (kGB[t].empty()) b.zero_grad();
    else b.set_grad(make(kGB[t], {3}, dtype));
    opt->step();
  }
  return {a.value().to(kFloat64).to_vector<double>(), b.value().to(kFloat64).to_vector<double>()};
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol, const std::string& what) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]) / (1.0 + std::abs(want[i])));
  BOOST_TEST_MESSAGE(what << ": worst relative error " << worst);
  BOOST_TEST(worst <= tol, what << ": worst error " << worst << " > " << tol);
}

void check_reference(const MakeOptimizer& make_opt, DType dtype, const Trajectory& want, const std::string& what) {
  const Trajectory got = run_reference_problem(make_opt, dtype);
  const double tol = dtype == kFloat32 ? 1e-6 : 1e-13;
  check_close(got.a, want.a, tol, what + " A");
  check_close(got.b, want.b, tol, what + " B");
}

template <typename Opt, typename Options>
MakeOptimizer factory(Options options) {
  return [options](std::vector<Variable> ps) { return std::make_unique<Opt>(std::move(ps), options); };
}

}  // namespace

// Reference values: PyTorch 1.13 (CPU, default single-tensor path), produced by
//
//   a = torch.tensor(A0, requires_grad=True); b = torch.tensor(B0, requires_grad=True)
//   opt = <optimizer>([a, b], ...)
//   for t in range(3):
//       a.grad = torch.tensor(GA[t]); b.grad = None if GB[t] is None else torch.tensor(GB[t])
//       opt.step()
//   print("%.9g" % v for v in a and b)     # "%.17g" and dtype=torch.float64 for the f64 cases
//
// with A0, B0, GA, GB as kA0, kB0, kGA, kGB above.
BOOST_AUTO_TEST_SUITE(optimizers_vs_pytorch)

BOOST_AUTO_TEST_CASE(sgd) {
  check_reference(factory<SGD>(SGDOptions{.lr = 0.1}), kFloat32,
                  {{0.420000017, -1.00999999, 2.06499982, 0.0899999887, -0.150000006, -0.514999986},
                   {1.08000004, -2.03999996, 0.469999999}},
                  "SGD(lr=0.1)");
  // SGD(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)
  const SGDOptions momentum{.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01};
  check_reference(factory<SGD>(momentum), kFloat32,
                  {{0.326357335, -0.967552602, 2.07459021, 0.0150963105, -0.184869528, -0.446348071},
                   {1.04921889, -2.02041078, 0.471600443}},
                  "SGD momentum");
  check_reference(factory<SGD>(momentum), kFloat64,
                  {{0.32635730649499994, -0.96755261298999995, 2.0745900340799999, 0.015096289697499996,
                    -0.18486954050000001, -0.44634807329249998},
                   {1.0492189000000001, -2.0204108000000001, 0.47160045}},
                  "SGD momentum f64");
  // SGD(lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True)
  check_reference(factory<SGD>(SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true}),
                  kFloat32,
                  {{0.248056352, -0.980390728, 2.14220762, -0.15613848, -0.321115941, -0.225910932},
                   {1.13126576, -2.05872345, 0.440696806}},
                  "SGD nesterov");
}

BOOST_AUTO_TEST_CASE(adam) {
  // Adam(lr=0.01)
  check_reference(factory<Adam>(AdamOptions{.lr = 0.01}), kFloat32,
                  {{0.477779329, -0.985745192, 1.9989152, 0.249391168, -0.0150793856, -0.729809821},
                   {0.995983541, -1.9959836, 0.492558628}},
                  "Adam");
  // Adam(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1, amsgrad=True)
  const AdamOptions l2{.lr = 0.01, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1, .amsgrad = true};
  check_reference(factory<Adam>(l2), kFloat32,
                  {{0.476900756, -0.98023653, 1.99385285, 0.248612732, -0.0149298459, -0.728249192},
                   {0.995457768, -1.99112773, 0.481352329}},
                  "Adam L2 amsgrad");
  check_reference(factory<Adam>(l2), kFloat64,
                  {{0.4769007788263584, -0.98023653024344326, 1.9938528990537503, 0.24861274052561183,
                    -0.014929846027687165, -0.72824919582622216},
                   {0.99545781693196478, -1.991127768580909, 0.48135234774058544}},
                  "Adam L2 amsgrad f64");
}

BOOST_AUTO_TEST_CASE(adamw) {
  // AdamW(lr=0.01, weight_decay=0.1)
  check_reference(factory<AdamW>(AdamWOptions{.lr = 0.01, .weight_decay = 0.1}), kFloat32,
                  {{0.476308912, -0.982774973, 1.99293613, 0.248627931, -0.0150599228, -0.727585435},
                   {0.993994594, -1.99199569, 0.491559148}},
                  "AdamW");
  // AdamW(lr=0.01, betas=(0.9, 0.98), weight_decay=0.5, amsgrad=True)
  check_reference(factory<AdamW>(AdamWOptions{.lr = 0.01, .beta2 = 0.98, .weight_decay = 0.5, .amsgrad = true}),
                  kFloat32,
                  {{0.470497042, -0.970979333, 1.9690882, 0.245660752, -0.0149434265, -0.718774974},
                   {0.986032188, -1.97605729, 0.487606585}},
                  "AdamW amsgrad");
}

BOOST_AUTO_TEST_CASE(adagrad) {
  // Adagrad(lr=0.1)
  check_reference(factory<Adagrad>(AdagradOptions{.lr = 0.1}), kFloat32,
                  {{0.329100132, -0.98320502, 1.99099898, 0.251941949, -0.119742721, -0.593358159},
                   {0.998058081, -1.99805808, 0.400000006}},
                  "Adagrad");
  // Adagrad(lr=0.1, lr_decay=0.01, weight_decay=0.05, initial_accumulator_value=0.1, eps=1e-10)
  const AdagradOptions all{.lr = 0.1, .lr_decay = 0.01, .weight_decay = 0.05, .initial_accumulator_value = 0.1};
  check_reference(factory<Adagrad>(all), kFloat32,
                  {{0.394051731, -0.978505552, 1.99372923, 0.23083213, -0.107324257, -0.597216368},
                   {1.02917171, -2.01907873, 0.421306729}},
                  "Adagrad all options");
  check_reference(factory<Adagrad>(all), kFloat64,
                  {{0.39405172310666214, -0.97850556523259291, 1.9937292792954338, 0.23083214610133537,
                    -0.10732425915018187, -0.59721640037457613},
                   {1.0291717004156189, -2.0190786146868449, 0.42130674450576217}},
                  "Adagrad all options f64");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(optimizer_behaviour)

BOOST_AUTO_TEST_CASE(skipped_parameters_get_no_state) {
  Variable a(make(kA0, {2, 3}, kFloat32), true);
  Variable b(make(kB0, {3}, kFloat32), true);
  Adam opt({a, b}, {.lr = 0.01});
  a.set_grad(make(kGA[0], {2, 3}, kFloat32));
  opt.step();
  BOOST_TEST(opt.step_count(0) == 1);
  BOOST_TEST(opt.step_count(1) == 0);
  BOOST_TEST(b.value().to_vector<float>() == std::vector<float>({1.0f, -2.0f, 0.5f}));
  const OptimizerState s = opt.state();
  for (const auto& [name, t] : s.tensors) BOOST_TEST(name.find(".1") == std::string::npos, name);
}

BOOST_AUTO_TEST_CASE(adagrad_per_tensor_clip) {
  // Adaptive-span AdagradWithGradClip: the step is scaled by clip / (||g|| + 1e-10) when
  // ||g|| > clip, the accumulator sees the unclipped gradient. Hand-computed in double.
  const double lr = 0.07, clip = 0.03;
  Variable p(Tensor::from_vector(std::vector<double>{1.0, 2.0}, {2}), true);
  Adagrad opt({p}, {.lr = lr, .clip_per_tensor = clip});
  std::vector<double> w = {1.0, 2.0}, G = {0.0, 0.0};
  const std::vector<std::vector<double>> grads = {{0.3, -0.4}, {0.01, 0.02}, {-1.0, 2.0}};
  for (const auto& g : grads) {
    p.set_grad(Tensor::from_vector(g, {2}));
    opt.step();
    const double norm = std::sqrt(g[0] * g[0] + g[1] * g[1]);
    const double step_lr = norm > clip ? lr * clip / (norm + 1e-10) : lr;
    for (int i = 0; i < 2; ++i) {
      G[i] += g[i] * g[i];
      w[i] -= step_lr * g[i] / (std::sqrt(G[i]) + 1e-10);
    }
  }
  check_close(p.value().to_vector<double>(), w, 1e-14, "Adagrad clip_per_tensor");
}

BOOST_AUTO_TEST_CASE(invalid_construction) {
  Variable a(Tensor::zeros({2}), true);
  BOOST_CHECK_THROW(Adam({a, a}), Error);  // the same parameter twice
  BOOST_CHECK_THROW(Adam({Variable()}), Error);
  BOOST_CHECK_THROW(Adam({Variable(Tensor::zeros({2}, kInt64))}), Error);
  BOOST_CHECK_THROW(Adam({a}, {.beta1 = 1.0}), Error);
  BOOST_CHECK_THROW(Adam({a}, {.lr = -1.0}), Error);
  BOOST_CHECK_THROW(SGD({a}, {.lr = 0.1, .nesterov = true}), Error);  // nesterov without momentum
  BOOST_CHECK_THROW(Adagrad({a}, {.lr_decay = -1.0}), Error);
  try {
    Adam({a, a});
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("twice") != std::string::npos, e.what());
  }
}

BOOST_AUTO_TEST_CASE(noncontiguous_parameter) {
  // A parameter that is a transposed view: the fused path updates a contiguous copy and writes
  // it back through the view; the result must match a contiguous parameter.
  Generator gen(7);
  const Tensor base = normal({3, 4}, 0, 1, gen);
  const Tensor grad = normal({4, 3}, 0, 1, gen);
  Variable view(base.clone().transpose(0, 1), true);
  Variable plain(base.clone().transpose(0, 1).contiguous(), true);
  BOOST_REQUIRE(!view.value().is_contiguous());
  Adam o1({view}, {.lr = 0.1}), o2({plain}, {.lr = 0.1});
  for (int t = 0; t < 3; ++t) {
    view.set_grad(grad);
    plain.set_grad(grad);
    o1.step();
    o2.step();
  }
  BOOST_TEST(max_abs_diff(view.value(), plain.value()) == 0.0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(fused_adam)

// Every fused path has a composite twin: both must agree on random data over several steps,
// for each variant (Adam/AdamW, with and without amsgrad, with and without L2) and dtype.
BOOST_AUTO_TEST_CASE(fused_matches_composite_twin) {
  for (DType dtype : {kFloat32, kFloat64}) {
    for (int variant = 0; variant < 6; ++variant) {
      AdamStepConfig config{.lr = 3e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                            .weight_decay = (variant % 3 == 0) ? 0.0 : 0.05,
                            .amsgrad = variant % 2 == 1, .decoupled = variant >= 4, .step = 0};
      Generator gen(100 + variant);
      const Shape shape = {37, 1000};  // large enough to run on several threads
      Tensor p1 = normal(shape, 0, 1, gen, dtype), p2 = p1.clone();
      Tensor m1 = Tensor::zeros(shape, dtype), m2 = m1.clone();
      Tensor v1 = Tensor::zeros(shape, dtype), v2 = v1.clone();
      Tensor x1 = Tensor::zeros(shape, dtype), x2 = x1.clone();
      double worst = 0;
      for (int t = 1; t <= 5; ++t) {
        const Tensor g = normal(shape, 0, t == 3 ? 10.0 : 0.1, gen, dtype);
        config.step = t;
        adam_update_fused(p1, g, m1, v1, x1, config);
        adam_update_composite(p2, g, m2, v2, x2, config);
        worst = std::max({worst, max_abs_diff(p1, p2), max_abs_diff(m1, m2), max_abs_diff(v1, v2)});
        if (config.amsgrad) worst = std::max(worst, max_abs_diff(x1, x2));
      }
      // The two differ only where the compiler contracts a*b+c into an FMA in the fused loop
      // (-march=native): a few units in the last place of the largest value.
      const double ulp = dtype == kFloat32 ? 1.1920929e-7 : 2.220446e-16;
      const double scale = std::max({1.0, amax(abs(p2)).item(), amax(abs(v2)).item()});
      const double tol = 8 * ulp * scale;
      BOOST_TEST_MESSAGE("fused vs composite, " << dtype_name(dtype) << " variant " << variant << ": max diff "
                                                << worst);
      BOOST_TEST(worst <= tol, dtype_name(dtype) << " variant " << variant << ": " << worst);
    }
  }
}

BOOST_AUTO_TEST_CASE(optimizer_fused_and_composite_paths_agree) {
  for (bool decoupled : {false, true}) {
    Generator gen(3);
    const Tensor init = normal({64, 33}, 0, 1, gen);
    Variable p1(init.clone(), true), p2(init.clone(), true);
    std::unique_ptr<Adam> o1, o2;
    if (decoupled) {
      o1 = std::make_unique<AdamW>(std::vector<Variable>{p1}, AdamWOptions{.lr = 0.01, .amsgrad = true});
      o2 = std::make_unique<AdamW>(std::vector<Variable>{p2}, AdamWOptions{.lr = 0.01, .amsgrad = true});
    } else {
      o1 = std::make_unique<Adam>(std::vector<Variable>{p1}, AdamOptions{.lr = 0.01, .weight_decay = 0.1});
      o2 = std::make_unique<Adam>(std::vector<Variable>{p2}, AdamOptions{.lr = 0.01, .weight_decay = 0.1});
    }
    o2->set_use_fused(false);
    for (int t = 0; t < 4; ++t) {
      const Tensor g = normal({64, 33}, 0, 1, gen);
      p1.set_grad(g);
      p2.set_grad(g);
      o1->step();
      o2->step();
    }
    const double scale = std::max(1.0, amax(abs(p2.value())).item());
    BOOST_TEST(max_abs_diff(p1.value(), p2.value()) <= 8 * 1.1920929e-7 * scale);
  }
}

BOOST_AUTO_TEST_CASE(fused_rejects_bad_operands) {
  Tensor p = Tensor::zeros({2, 3}), m = Tensor::zeros({2, 3}), v = Tensor::zeros({2, 3}), x;
  const AdamStepConfig c{.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0,
                         .amsgrad = false, .decoupled = false, .step = 1};
  BOOST_CHECK_THROW(adam_update_fused(p, Tensor::zeros({3, 2}), m, v, x, c), Error);
  BOOST_CHECK_THROW(adam_update_fused(p, Tensor::zeros({2, 3}, kFloat64), m, v, x, c), Error);
  AdamStepConfig ams = c;
  ams.amsgrad = true;
  BOOST_CHECK_THROW(adam_update_fused(p, Tensor::zeros({2, 3}), m, v, x, ams), Error);  // vmax undefined
  AdamStepConfig zero = c;
  zero.step = 0;
  BOOST_CHECK_THROW(adam_update_fused(p, Tensor::zeros({2, 3}), m, v, x, zero), Error);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(nonfinite_guard)

BOOST_AUTO_TEST_CASE(detects_nan_and_inf) {
  Variable a(Tensor::zeros({100000}), true);
  BOOST_TEST(!has_nonfinite_grad({a}));  // no gradient at all
  Tensor g = Tensor::zeros({100000});
  a.set_grad(g);
  BOOST_TEST(!has_nonfinite_grad({a}));
  g.data<float>()[99999] = std::numeric_limits<float>::infinity();
  BOOST_TEST(has_nonfinite_grad({a}));
  g.data<float>()[99999] = 0;
  g.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  BOOST_TEST(has_nonfinite_grad({a}));
  BOOST_TEST(!has_nonfinite_value({a}));
  BOOST_TEST(!has_nonfinite(Tensor::zeros({3}, kInt64)));
}

BOOST_AUTO_TEST_CASE(flags_name_each_tensor) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<Tensor> tensors{
      Tensor::from_vector({1.0f, 2.0f}, {2}),  // finite
      Tensor::from_vector({1.0f, nan}, {2}),
      Tensor(),                                  // undefined (no gradient): not flagged
      Tensor::from_vector({-inf}, {1}),
      Tensor::zeros({3}, kInt64),                // integers are always finite
      Tensor::from_vector({0.0f, inf, 1.0f, 2.0f}, {2, 2}).transpose(0, 1),  // a strided view
      Tensor::zeros({0}),                        // empty
  };
  BOOST_TEST(nonfinite_flags(tensors) == std::vector<char>({0, 1, 0, 1, 0, 1, 0}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(step_refuses_nonfinite_gradient) {
  Variable a(Tensor::from_vector({1.0f, 2.0f}, {2}), true);
  Variable b(Tensor::from_vector({3.0f}, {1}), true);
  Adam opt({a, b}, {.lr = 0.1});
  a.set_grad(Tensor::from_vector({0.5f, 0.5f}, {2}));
  b.set_grad(Tensor::from_vector({std::numeric_limits<float>::quiet_NaN()}, {1}));
  try {
    opt.step();
    BOOST_FAIL("step() applied a NaN gradient");
  } catch (const Error& e) {
    const std::string msg = e.what();
    BOOST_TEST(msg.find("parameter 1") != std::string::npos, msg);
    BOOST_TEST(msg.find("NaN") != std::string::npos, msg);
  }
  // Nothing changed: not even the parameter with a finite gradient, and no state was created.
  BOOST_TEST(a.value().to_vector<float>() == std::vector<float>({1.0f, 2.0f}));
  BOOST_TEST(opt.step_count(0) == 0);

  // step_if_finite skips and reports instead.
  BOOST_TEST(!opt.step_if_finite());
  BOOST_TEST(a.value().to_vector<float>() == std::vector<float>({1.0f, 2.0f}));
  BOOST_TEST(opt.step_count(0) == 0);
  b.set_grad(Tensor::from_vector({0.25f}, {1}));
  BOOST_TEST(opt.step_if_finite());
  BOOST_TEST(opt.step_count(0) == 1);
  BOOST_TEST(a.value().to_vector<float>()[0] != 1.0f);
}

BOOST_AUTO_TEST_CASE(step_refuses_nonfinite_parameter) {
  Variable a(Tensor::from_vector({std::numeric_limits<float>::infinity(), 2.0f}, {2}), true);
  a.set_name("layer.weight");
  SGD opt({a}, {.lr = 0.1});
  a.set_grad(Tensor::from_vector({0.5f, 0.5f}, {2}));
  try {
    opt.step();
    BOOST_FAIL("step() updated an Inf parameter");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("layer.weight") != std::string::npos, e.what());
  }
  BOOST_CHECK_THROW((void)opt.step_if_finite(), Error);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(optimizer_state)

// Exporting after k steps and importing into a fresh optimizer must continue bit-identically.
template <typename Opt, typename Options>
void check_resume(const Options& options, const std::string& what) {
  Generator gen(11);
  const Tensor init_a = normal({4, 5}, 0, 1, gen), init_b = normal({5}, 0, 1, gen);
  std::vector<Tensor> grads_a, grads_b;
  for (int t = 0; t < 6; ++t) {
    grads_a.push_back(normal({4, 5}, 0, 1, gen));
    grads_b.push_back(normal({5}, 0, 1, gen));
  }
  // Straight run.
  Variable a(init_a.clone(), true), b(init_b.clone(), true);
  Opt straight({a, b}, options);
  for (int t = 0; t < 6; ++t) {
    a.set_grad(grads_a[t]);
    if (t != 1) b.set_grad(grads_b[t]);  // b skipped once: its step count lags
    else b.zero_grad();
    straight.step();
  }
  // 3 steps, export, fresh optimizer over copies of the parameters, import, 3 steps.
  Variable a1(init_a.clone(), true), b1(init_b.clone(), true);
  Opt first({a1, b1}, options);
  for (int t = 0; t < 3; ++t) {
    a1.set_grad(grads_a[t]);
    if (t != 1) b1.set_grad(grads_b[t]);
    else b1.zero_grad();
    first.step();
  }
  const OptimizerState saved = first.state();
  Variable a2(a1.value().clone(), true), b2(b1.value().clone(), true);
  Opt second({a2, b2}, Options{});  // hyperparameters come from the state
  second.load_state(saved);
  BOOST_TEST(second.lr() == first.lr());
  for (int t = 3; t < 6; ++t) {
    a2.set_grad(grads_a[t]);
    b2.set_grad(grads_b[t]);
    second.step();
  }
  BOOST_TEST(max_abs_diff(a.value(), a2.value()) == 0.0, what);
  BOOST_TEST(max_abs_diff(b.value(), b2.value()) == 0.0, what);
}

BOOST_AUTO_TEST_CASE(resume_is_exact) {
  check_resume<Adam>(AdamOptions{.lr = 0.05, .weight_decay = 0.01, .amsgrad = true}, "Adam");
  check_resume<AdamW>(AdamWOptions{.lr = 0.05, .beta2 = 0.95}, "AdamW");
  check_resume<SGD>(SGDOptions{.lr = 0.05, .momentum = 0.9, .nesterov = true}, "SGD");
  check_resume<Adagrad>(AdagradOptions{.lr = 0.05, .lr_decay = 0.1, .initial_accumulator_value = 0.1}, "Adagrad");
}

BOOST_AUTO_TEST_CASE(state_names) {
  Variable a(Tensor::zeros({2}), true);
  Adam opt({a}, {.amsgrad = true});
  a.set_grad(Tensor::ones({2}));
  opt.step();
  const OptimizerState s = opt.state();
  BOOST_TEST(s.kind == "adam");
  std::vector<std::string> names;
  for (const auto& [n, t] : s.tensors) names.push_back(n);
  BOOST_TEST(names == std::vector<std::string>({"adam.step.0", "adam.m.0", "adam.v.0", "adam.vmax.0"}),
             fmt::format("{}", fmt::join(names, ",")));
  BOOST_TEST(s.hyper.at("lr") == 1e-3);
  BOOST_TEST(s.hyper.at("beta2") == 0.999);
}

BOOST_AUTO_TEST_CASE(bad_state_is_rejected_and_changes_nothing) {
  Variable a(Tensor::zeros({2, 2}), true);
  Adam opt({a}, {.lr = 0.01});
  a.set_grad(Tensor::ones({2, 2}));
  opt.step();
  const OptimizerState good = opt.state();

  auto expect_error = [&](OptimizerState s, const std::string& needle) {
    try {
      opt.load_state(s);
      BOOST_FAIL("load_state accepted a bad state (" << needle << ")");
    } catch (const Error& e) {
      BOOST_TEST(std::string(e.what()).find(needle) != std::string::npos, e.what());
    }
    // Still the old state.
    BOOST_TEST(opt.step_count(0) == 1);
    BOOST_TEST(opt.lr() == 0.01);
  };
  OptimizerState wrong_kind = good;
  wrong_kind.kind = "sgd";
  expect_error(wrong_kind, "'sgd'");
  OptimizerState wrong_shape = good;
  wrong_shape.hyper["lr"] = 0.5;
  for (auto& [n, t] : wrong_shape.tensors)
    if (n == "adam.m.0") t = Tensor::zeros({4});
  expect_error(wrong_shape, "adam.m.0");
  OptimizerState extra = good;
  extra.tensors.emplace_back("adam.momentum.0", Tensor::zeros({2, 2}));
  expect_error(extra, "adam.momentum.0");
  OptimizerState missing = good;
  missing.tensors.erase(missing.tensors.begin() + 1);  // adam.m.0
  expect_error(missing, "adam.m.0");
  OptimizerState no_hyper = good;
  no_hyper.hyper.erase("beta1");
  expect_error(no_hyper, "beta1");
  OptimizerState count = good;
  count.hyper["num_params"] = 3;
  expect_error(count, "3 parameters");
}

BOOST_AUTO_TEST_SUITE_END()

// clip_grad_norm_ / clip_grad_value_ reference values: PyTorch 1.13,
//   a.grad = torch.tensor(GA[1]); b.grad = torch.tensor(GB[0])
//   total = torch.nn.utils.clip_grad_norm_([a, b], 1.5, norm_type=p)
BOOST_AUTO_TEST_SUITE(clipping)

BOOST_AUTO_TEST_CASE(clip_grad_norm_matches_pytorch) {
  struct Case {
    double norm_type, total;
    std::vector<double> ga, gb;
  };
  const std::vector<Case> cases = {
      {2.0, 2.52239966, {0.594671607, 0, -0.594671607, 1.18934321, -0.297335804, 0.148667902},
       {0.118934326, -0.0594671629, 0}},
      {1.0, 5.05000019, {0.297029644, 0, -0.297029644, 0.594059289, -0.148514822, 0.0742574111},
       {0.0594059303, -0.0297029652, 0}},
      {3.0, 2.1651268, {0.692799747, 0, -0.692799747, 1.38559949, -0.346399873, 0.173199937},
       {0.138559952, -0.0692799762, 0}},
      {kInfNorm, 2.0, {0.749999642, 0, -0.749999642, 1.49999928, -0.374999821, 0.187499911},
       {0.149999931, -0.0749999657, 0}},
  };
  for (const Case& c : cases) {
    Variable a(make(kA0, {2, 3}, kFloat32), true), b(make(kB0, {3}, kFloat32), true), unused(Tensor::zeros({2}), true);
    a.set_grad(make(kGA[1], {2, 3}, kFloat32));
    b.set_grad(make(kGB[0], {3}, kFloat32));
    const double total = clip_grad_norm_({a, b, unused}, 1.5, c.norm_type);
    BOOST_TEST(std::abs(total - c.total) <= 1e-6 * c.total, "norm " << c.norm_type << ": " << total);
    check_close(a.grad().to(kFloat64).to_vector<double>(), c.ga, 1e-6, "clipped A");
    check_close(b.grad().to(kFloat64).to_vector<double>(), c.gb, 1e-6, "clipped B");
    BOOST_TEST(!unused.grad().defined());
  }
}

BOOST_AUTO_TEST_CASE(clip_grad_norm_below_threshold_and_nonfinite) {
  Variable a(Tensor::zeros({3}), true);
  a.set_grad(Tensor::from_vector({0.3f, 0.4f, 0.0f}, {3}));
  BOOST_TEST(std::abs(clip_grad_norm_({a}, 1.0) - 0.5) < 1e-7);
  BOOST_TEST(a.grad().to_vector<float>() == std::vector<float>({0.3f, 0.4f, 0.0f}));  // untouched
  BOOST_TEST(std::abs(grad_norm({a}, 1.0) - 0.7) < 1e-6, "grad_norm L1");

  a.set_grad(Tensor::from_vector({0.3f, std::numeric_limits<float>::infinity(), 5.0f}, {3}));
  const double total = clip_grad_norm_({a}, 1.0);
  BOOST_TEST(!std::isfinite(total));
  BOOST_TEST(a.grad().to_vector<float>()[2] == 5.0f);  // left as evidence, not scaled by NaN
  a.set_grad(Tensor::from_vector({0.3f, std::numeric_limits<float>::quiet_NaN(), 5.0f}, {3}));
  BOOST_TEST(std::isnan(clip_grad_norm_({a}, 1.0, kInfNorm)));
  BOOST_CHECK_THROW(clip_grad_norm_({a}, 1.0, 0.0), Error);
  BOOST_CHECK_THROW(clip_grad_norm_({a}, -1.0), Error);
}

BOOST_AUTO_TEST_CASE(clip_grad_value_matches_pytorch) {
  // torch.nn.utils.clip_grad_value_([a], 0.6) with a.grad = GA[1]
  Variable a(make(kA0, {2, 3}, kFloat32), true);
  a.set_grad(make(kGA[1], {2, 3}, kFloat32));
  clip_grad_value_({a}, 0.6);
  check_close(a.grad().to(kFloat64).to_vector<double>(),
              {0.6000000238418579, 0.0, -0.6000000238418579, 0.6000000238418579, -0.5, 0.25}, 0, "clip value");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(gradient_accumulation)

// loss_i = mean((x_i w - y_i)^2) on micro-batch i.
Variable micro_loss(const Variable& w, const Tensor& x, const Tensor& y) {
  return mean(square(sub(matmul(Variable(x), w), Variable(y))));
}

BOOST_AUTO_TEST_CASE(backward_k_times_sums_gradients) {
  Generator gen(5);
  const Tensor x = normal({8, 3}, 0, 1, gen), y = normal({8, 1}, 0, 1, gen);
  const Tensor w0 = normal({3, 1}, 0, 1, gen);
  const Tensor x1 = x.narrow(0, 0, 4), x2 = x.narrow(0, 4, 4), y1 = y.narrow(0, 0, 4), y2 = y.narrow(0, 4, 4);

  // Separately: the gradient of each micro-batch.
  Variable w(w0.clone(), true);
  micro_loss(w, x1, y1).backward();
  const Tensor g1 = w.grad().clone();
  w.zero_grad();
  micro_loss(w, x2, y2).backward();
  const Tensor g2 = w.grad().clone();

  for (bool divide : {false, true}) {
    GradAccumulator acc(2, divide);
    Variable wa(w0.clone(), true);
    std::vector<bool> steps;
    for (const auto& [xb, yb] : {std::pair{x1, y1}, std::pair{x2, y2}}) {
      mul_scalar(micro_loss(wa, xb, yb), acc.loss_scale()).backward();
      steps.push_back(acc.micro_step());
    }
    BOOST_TEST(steps == std::vector<bool>({false, true}));
    BOOST_TEST(acc.pending() == 0);
    if (!divide) {
      // posattn protocol: the sum of the two batch means.
      BOOST_TEST(max_abs_diff(wa.grad(), add(g1, g2)) <= 1e-6);
    } else {
      // Divided: the same gradient as one batch of 8.
      Variable wf(w0.clone(), true);
      micro_loss(wf, x, y).backward();
      BOOST_TEST(max_abs_diff(wa.grad(), wf.grad()) <= 1e-6);
    }
  }
}

BOOST_AUTO_TEST_CASE(accumulator_counts) {
  GradAccumulator acc(3, false);
  BOOST_TEST(acc.loss_scale() == 1.0);
  std::vector<bool> pattern;
  for (int i = 0; i < 7; ++i) pattern.push_back(acc.micro_step());
  BOOST_TEST(pattern == std::vector<bool>({false, false, true, false, false, true, false}));
  BOOST_TEST(acc.pending() == 1);
  acc.reset();
  BOOST_TEST(acc.pending() == 0);
  BOOST_TEST(GradAccumulator(4).loss_scale() == 0.25);
  BOOST_CHECK_THROW(GradAccumulator(0), Error);
  BOOST_CHECK_THROW(acc.set_pending(3), Error);
}

BOOST_AUTO_TEST_SUITE_END()
