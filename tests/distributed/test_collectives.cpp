// The collectives of distributed::world() with whatever rank count runs the suite (1 alone, 2
// under mpirun): sums, broadcasts and gathers of rank-dependent values, the gradient averager
// (several buckets, a parameter without a gradient on some or all ranks) and the replication of
// rank 0's model.
#include <boost/test/unit_test.hpp>

#include "distributed/gradient_averager.h"
#include "distributed/process_group.h"
#include "distributed/replicas.h"
#include "nn/linear.h"
#include "tensor/ops.h"

using namespace posgrad;
using namespace posgrad::distributed;

namespace {

ProcessGroup& group() { return world(); }

double triangle(int p) { return p * (p + 1) / 2.0; }  // 1 + 2 + ... + p

}  // namespace

BOOST_AUTO_TEST_SUITE(collectives)

BOOST_AUTO_TEST_CASE(all_reduce_broadcast_and_gather) {
  ProcessGroup& g = group();
  const int p = g.size(), r = g.rank();
  for (DType dtype : {kFloat32, kFloat64}) {
    Tensor t = Tensor::full({3, 2}, r + 1, dtype);
    g.all_reduce_sum(t);
    for (double v : t.to_vector<double>()) BOOST_TEST(v == triangle(p));
  }
  std::vector<double> numbers{1.0 * r, 2.5};
  g.all_reduce_sum(numbers);
  BOOST_TEST(numbers[0] == triangle(p - 1));
  BOOST_TEST(numbers[1] == 2.5 * p);

  Tensor b = Tensor::full({4}, r == 0 ? 42.0 : -1.0, kFloat32);
  g.broadcast(b, 0);
  for (float v : b.to_vector<float>()) BOOST_TEST(v == 42.0f);
  std::string text = r == 0 ? "from rank zero" : "x";
  g.broadcast(text, 0);
  BOOST_TEST(text == "from rank zero");

  const Tensor mine = Tensor::full({2, 3}, r, kFloat32);  // [2, 3] on each rank
  const Tensor all = g.all_gather(mine);                   // [2p, 3]
  BOOST_TEST(all.shape() == (Shape{2 * p, 3}));
  const auto v = all.to_vector<float>();
  for (int64_t row = 0; row < 2 * p; ++row)
    for (int64_t col = 0; col < 3; ++col) BOOST_TEST(v[static_cast<size_t>(row * 3 + col)] == row / 2);
  g.barrier();
}

BOOST_AUTO_TEST_CASE(gradients_are_averaged_in_buckets) {
  ProcessGroup& g = group();
  const int p = g.size(), r = g.rank();
  Variable a(Tensor::zeros({5}), true), b(Tensor::zeros({3, 4}), true), c(Tensor::zeros({2}), true),
      d(Tensor::zeros({2}), true);
  a.set_grad(Tensor::full({5}, 2.0 * (r + 1)));
  b.set_grad(Tensor::full({3, 4}, -1.0 * r));
  if (r == 0) c.set_grad(Tensor::full({2}, 6.0));  // rank 0 alone has a gradient for c; nobody for d
  GradientAverager averager({a, b, c, d}, g, /*bucket_bytes=*/48);  // 12 floats, last to first: d and c, b alone, a
  BOOST_TEST(averager.buckets() == 3);
  averager.average();
  for (float v : a.grad().to_vector<float>()) BOOST_TEST(v == 2.0 * triangle(p) / p, boost::test_tools::tolerance(1e-6));
  for (float v : b.grad().to_vector<float>()) BOOST_TEST(v == -triangle(p - 1) / p, boost::test_tools::tolerance(1e-6));
  BOOST_REQUIRE(c.grad().defined());
  for (float v : c.grad().to_vector<float>()) BOOST_TEST(v == 6.0 / p, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(!d.grad().defined());
  BOOST_TEST(averager.stats().calls == 1);
  BOOST_TEST(averager.stats().bytes == (p == 1 ? 0 : (5 + 12 + 4) * 4));
}

BOOST_AUTO_TEST_CASE(every_rank_starts_from_rank_0s_model) {
  ProcessGroup& g = group();
  Generator gen(100 + static_cast<uint64_t>(g.rank()));  // a different initialisation on every rank
  Linear layer(3, 2, true, gen);
  const uint64_t seed = broadcast_seed(1000 + static_cast<uint64_t>(g.rank()), g);
  BOOST_TEST(seed == 1000u);
  broadcast_module(layer, g);
  Generator gen0(100);
  Linear expected(3, 2, true, gen0);
  const auto got = layer.named_parameters(), want = expected.named_parameters();
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    BOOST_TEST(got[i].second.value().to_vector<float>() == want[i].second.value().to_vector<float>(),
               boost::test_tools::per_element());
  const auto means = mean_over_ranks({1.0 * g.rank()}, g);
  BOOST_TEST(means[0] == (g.size() - 1) / 2.0);
}

// Ranks that built different models (here: rank 1 a wider layer) all stop with one error naming
// the first difference, instead of broadcasting mismatched tensors; alone, a rank keeps its model.
BOOST_AUTO_TEST_CASE(ranks_with_different_models_are_refused) {
  ProcessGroup& g = group();
  Generator gen(7);
  Linear layer(3, g.rank() == 1 ? 4 : 2, true, gen);
  const auto before = layer.named_parameters()[0].second.value().to_vector<float>();
  if (g.size() == 1) {
    broadcast_module(layer, g);
    BOOST_TEST(layer.named_parameters()[0].second.value().to_vector<float>() == before, boost::test_tools::per_element());
    return;
  }
  try {
    broadcast_module(layer, g);
    BOOST_FAIL("no error");
  } catch (const Error& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find("the ranks built different models (1 of " + std::to_string(g.size()) + " differ from rank 0") !=
                   std::string::npos,
               what);
    if (g.rank() == 1) BOOST_TEST(what.find("weight float32[4, 3]") != std::string::npos, what);
  }
}

BOOST_AUTO_TEST_SUITE_END()
