// The gradient averager's overlap with the backward, with whatever rank count runs the suite (1
// alone: nothing to overlap, the paths must still agree; 2 under mpirun): started sums, the
// overlapped average bit for bit equal to the blocking one (float64), with a parameter that only
// rank 0's graph reaches and one that no graph reaches, gradient accumulation where only the last
// micro-batch's backward communicates, the error for a second backward while armed, and the app
// kit's DataParallel refusing a collective between the armed backward and average_gradients().
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <cstdio>

#include "apps/common/data_parallel.h"
#include "autograd/functions.h"
#include "distributed/gradient_averager.h"
#include "distributed/process_group.h"
#include "nn/linear.h"
#include "tensor/ops.h"

using namespace posgrad;
using namespace posgrad::distributed;

namespace {

// Three float64 layers and two loose parameters: `only_rank_0` enters the loss on rank 0 alone,
// `never` on no rank. The parameter list puts `only_rank_0` first, so its bucket is the last to
// start: rank 1 starts it only in average(), after rank 0 started it during its backward.
struct SmallNet {
  Generator gen{5};
  Linear first{4, 8, true, gen}, second{8, 8, true, gen}, third{8, 3, true, gen};
  Variable only_rank_0{Tensor::from_vector(std::vector<double>{1.5, -2.0}, {2}), true};
  Variable never{Tensor::from_vector(std::vector<double>{0.5}, {1}), true};

  SmallNet() {
    first.to(kFloat64);
    second.to(kFloat64);
    third.to(kFloat64);
  }
  std::vector<Variable> parameters() const {
    std::vector<Variable> all{only_rank_0, never};
    for (const Module* m : {static_cast<const Module*>(&first), static_cast<const Module*>(&second),
                            static_cast<const Module*>(&third)})
      for (const Variable& p : m->parameters()) all.push_back(p);
    return all;
  }
  // A different slice of data on every rank ([6, 4] float64), drawn from `draw`.
  Variable loss(int rank, uint64_t draw) {
    Generator data(1000 * draw + static_cast<uint64_t>(rank));
    const Tensor x = uniform({6, 4}, -1.0, 1.0, data, kFloat64);  // [B, D]
    Variable h = tanh(second.forward(tanh(first.forward(Variable(x)))));
    Variable out = mean(third.forward(h) * third.forward(h));
    return rank == 0 ? out + sum(only_rank_0 * only_rank_0) : out;
  }
  void zero_grad() {
    for (Variable p : parameters()) p.zero_grad();
  }
};

std::vector<std::vector<double>> gradients(const std::vector<Variable>& parameters) {
  std::vector<std::vector<double>> all;
  for (const Variable& p : parameters)
    all.push_back(p.grad().defined() ? p.grad().to_vector<double>() : std::vector<double>{});
  return all;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(overlapped_averaging)

BOOST_AUTO_TEST_CASE(started_sums_finish_in_any_order_of_waits) {
  ProcessGroup& g = world();
  const int p = g.size(), r = g.rank();
  Tensor a = Tensor::full({1000}, r + 1.0, kFloat64), b = Tensor::full({3}, 10.0 * (r + 1), kFloat32);
  auto first = g.start_all_reduce_sum(a);
  auto second = g.start_all_reduce_sum(b);
  second->progress();
  second->wait();
  first->wait();
  BOOST_TEST(first->progress());
  const double ranks = p * (p + 1) / 2.0;
  for (double v : a.to_vector<double>()) BOOST_TEST(v == ranks);
  for (float v : b.to_vector<float>()) BOOST_TEST(v == 10.0 * ranks);
}

BOOST_AUTO_TEST_CASE(overlapped_average_equals_the_blocking_one) {
  ProcessGroup& g = world();
  SmallNet net;
  GradientAverager averager(net.parameters(), g, /*bucket_bytes=*/8 * 40);  // several buckets
  BOOST_TEST(averager.buckets() >= 4);

  averager.overlap_next_backward();
  BOOST_TEST(averager.armed() == (g.size() > 1));
  net.loss(g.rank(), 1).backward();
  averager.average();
  BOOST_TEST(!averager.armed());
  const auto overlapped = gradients(net.parameters());
  if (g.size() > 1) {
    // Every bucket but the last (it holds `never`, which no backward reaches) started inside it.
    BOOST_TEST(averager.stats().buckets_started_in_backward == averager.buckets() - 1);
    BOOST_TEST(averager.stats().backward_seconds > 0);
  }

  net.zero_grad();
  net.loss(g.rank(), 1).backward();
  averager.average();  // not armed: the blocking sums
  const auto blocking = gradients(net.parameters());
  BOOST_REQUIRE_EQUAL(overlapped.size(), blocking.size());
  for (size_t i = 0; i < overlapped.size(); ++i)
    BOOST_TEST(overlapped[i] == blocking[i], boost::test_tools::per_element());

  // only_rank_0: rank 0's gradient 2 * value, counted as zeros elsewhere; never: no gradient.
  const auto shared = net.only_rank_0.grad().to_vector<double>();
  BOOST_TEST(shared[0] == 2 * 1.5 / g.size());
  BOOST_TEST(shared[1] == 2 * -2.0 / g.size());
  BOOST_TEST(!net.never.grad().defined());
  BOOST_TEST(averager.stats().calls == 2);
}

BOOST_AUTO_TEST_CASE(with_accumulation_only_the_last_backward_communicates) {
  ProcessGroup& g = world();
  SmallNet net;
  GradientAverager averager(net.parameters(), g, /*bucket_bytes=*/8 * 40);
  net.loss(g.rank(), 1).backward();  // micro-batch 1: not armed, nothing starts
  BOOST_TEST(averager.stats().buckets_started_in_backward == 0);
  averager.overlap_next_backward();
  net.loss(g.rank(), 2).backward();  // micro-batch 2: the sums start
  averager.average();
  const auto overlapped = gradients(net.parameters());
  BOOST_TEST(averager.stats().buckets_started_in_backward == (g.size() > 1 ? averager.buckets() - 1 : 0));

  net.zero_grad();
  net.loss(g.rank(), 1).backward();
  net.loss(g.rank(), 2).backward();
  averager.average();
  const auto blocking = gradients(net.parameters());
  for (size_t i = 0; i < overlapped.size(); ++i)
    BOOST_TEST(overlapped[i] == blocking[i], boost::test_tools::per_element());
}

// Armed before the first of two backwards: the second would change gradients already sent.
BOOST_AUTO_TEST_CASE(a_second_backward_while_armed_is_refused) {
  ProcessGroup& g = world();
  if (g.size() == 1) return;  // nothing is armed in a group of one
  SmallNet net;
  GradientAverager averager(net.parameters(), g, /*bucket_bytes=*/8 * 40);
  averager.overlap_next_backward();
  net.loss(g.rank(), 1).backward();
  BOOST_CHECK_EXCEPTION(net.loss(g.rank(), 2).backward(), Error, [](const Error& e) {
    return std::string(e.what()).find("second backward after overlap_next_backward()") != std::string::npos;
  });
  averager.average();  // every rank refused at the same point; the started sums still finish
  BOOST_TEST(!averager.armed());
}

// mean(), sum() and gather_rows() between overlap_next_backward() and average_gradients() would
// interleave with the started sums in a rank-dependent order: they refuse, naming the rule.
// (DataParallel sends the stdout of ranks other than 0 to /dev/null; the test restores it.)
BOOST_AUTO_TEST_CASE(data_parallel_refuses_a_collective_while_sums_are_in_flight) {
  std::fflush(stdout);
  const int saved_stdout = dup(STDOUT_FILENO);
  {
    posgrad::apps::DataParallel dp(kCPU);
    SmallNet net;
    dp.replicate(net.first);
    dp.overlap_next_backward();
    sum(net.first.forward(Variable(Tensor::ones({2, 4}, kFloat64)))).backward();
    if (dp.size() > 1) {
      BOOST_CHECK_EXCEPTION(dp.mean(1.0), Error, [](const Error& e) {
        return std::string(e.what()).find("mean() between overlap_next_backward() and average_gradients()") !=
               std::string::npos;
      });
      BOOST_CHECK_THROW(dp.sum(1.0), Error);
      BOOST_CHECK_THROW(dp.gather_rows(Tensor::ones({1, 2})), Error);
    }
    dp.average_gradients();
    BOOST_TEST(dp.mean(1.0 + dp.rank()) == 1.0 + (dp.size() - 1) / 2.0);
    BOOST_TEST(dp.summary().at("overlap").get<bool>() == (dp.size() > 1));
  }
  std::fflush(stdout);
  dup2(saved_stdout, STDOUT_FILENO);
  close(saved_stdout);
}

BOOST_AUTO_TEST_SUITE_END()
