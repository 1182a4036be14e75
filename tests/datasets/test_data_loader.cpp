// Dataset, collate and DataLoader: coverage of every index per epoch, drop_last, seeded orders
// independent of prefetch, exception propagation from the worker, early exit without a hang.
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <set>
#include <thread>

#include "datasets/data_loader.h"
#include "datasets/dataset.h"
#include "tensor/error.h"
#include "tensor/ops.h"
#include "test_util.h"

using namespace posgrad;
using posgrad::test::expect_error;

namespace {
// input = index (int64 []), target = 2 * index (float32 []).
std::shared_ptr<TensorDataset> index_dataset(int64_t n) {
  std::vector<float> twice;
  for (int64_t i = 0; i < n; ++i) twice.push_back(2.0f * static_cast<float>(i));
  return std::make_shared<TensorDataset>(Tensor::arange(n), Tensor::from_vector(twice, {n}));
}

std::vector<std::vector<int64_t>> run_epoch(const DataLoader& loader, int64_t e) {
  std::vector<std::vector<int64_t>> out;
  for (const Batch& b : loader.epoch(e)) out.push_back(b.input.to_vector<int64_t>());
  return out;
}

// Throws from get() at one index; optionally sleeps in every get() and counts calls.
class TrickyDataset : public Dataset {
 public:
  TrickyDataset(int64_t n, int64_t bad, int sleep_ms = 0) : n_(n), bad_(bad), sleep_ms_(sleep_ms) {}
  int64_t size() const override { return n_; }
  Example get(int64_t i) const override {
    ++calls;
    if (sleep_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_));
    if (i == bad_) fail("tricky dataset: example {} is broken", i);
    return Example{Tensor::from_vector(std::vector<int64_t>{i}, {1}), Tensor()};
  }
  mutable std::atomic<int64_t> calls{0};

 private:
  int64_t n_, bad_;
  int sleep_ms_;
};
}  // namespace

BOOST_AUTO_TEST_SUITE(dataset_and_loader)

BOOST_AUTO_TEST_CASE(tensor_dataset_get_and_batch) {
  auto ds = index_dataset(5);
  BOOST_TEST(ds->size() == 5);
  Example e = ds->get(3);
  BOOST_TEST(e.input.item() == 3.0);
  BOOST_TEST(e.target.item() == 6.0);
  Batch b = ds->get_batch({4, 0, 2});
  BOOST_TEST((b.input.shape() == Shape{3}));
  BOOST_TEST((b.input.to_vector<int64_t>() == std::vector<int64_t>{4, 0, 2}));
  BOOST_TEST((b.target.to_vector<float>() == std::vector<float>{8, 0, 4}));
  expect_error([&] { ds->get(5); }, {"index 5", "[0, 5)"});
  expect_error([&] { TensorDataset(Tensor::zeros({3, 2}), Tensor::zeros({4})); }, {"TensorDataset", "[3, 2]", "[4]"});
}

BOOST_AUTO_TEST_CASE(collate_stacks_and_checks) {
  std::vector<Example> ex;
  for (int i = 0; i < 3; ++i)
    ex.push_back({Tensor::full({2, 2}, i), Tensor::from_vector(std::vector<int64_t>{i}, {1})});
  Batch b = collate(ex);
  BOOST_TEST((b.input.shape() == Shape{3, 2, 2}));
  BOOST_TEST((b.target.shape() == Shape{3, 1}));
  BOOST_TEST(b.input.at<float>({2, 1, 1}) == 2.0f);
  // The default get_batch (via get + collate) agrees with the TensorDataset override.
  TrickyDataset plain(6, -1);
  Batch pb = plain.get_batch({5, 1});
  BOOST_TEST((pb.input.shape() == Shape{2, 1}));
  BOOST_TEST(!pb.target.defined());
  ex[1].input = Tensor::zeros({3});
  expect_error([&] { collate(ex); }, {"collate", "example 1"});
  expect_error([&] { collate({}); }, {"collate"});
}

BOOST_AUTO_TEST_CASE(subset_dataset_maps_indices) {
  auto base = index_dataset(10);
  SubsetDataset sub(base, {7, 3, 9});
  BOOST_TEST(sub.size() == 3);
  BOOST_TEST(sub.get(1).input.item() == 3.0);
  BOOST_TEST((sub.get_batch({2, 0}).input.to_vector<int64_t>() == std::vector<int64_t>{9, 7}));
  expect_error([&] { SubsetDataset(base, {10}); }, {"index 10"});
}

BOOST_AUTO_TEST_CASE(every_index_once_per_epoch) {
  for (bool shuffle : {false, true})
    for (int64_t prefetch : {0, 1, 3}) {
      DataLoader loader(index_dataset(103), 10, shuffle, 42, false, prefetch);
      BOOST_TEST(loader.num_batches() == 11);
      for (int64_t e = 0; e < 3; ++e) {
        std::multiset<int64_t> seen;
        const auto batches = run_epoch(loader, e);
        BOOST_TEST(batches.size() == 11u);
        BOOST_TEST(batches.back().size() == 3u);
        for (const auto& b : batches) seen.insert(b.begin(), b.end());
        BOOST_TEST(seen.size() == 103u);
        for (int64_t i = 0; i < 103; ++i) BOOST_TEST(seen.count(i) == 1u);
      }
    }
}

BOOST_AUTO_TEST_CASE(unshuffled_order_is_identity_and_targets_follow) {
  DataLoader loader(index_dataset(7), 3);
  int64_t next = 0;
  for (const Batch& b : loader.epoch(0)) {
    const auto in = b.input.to_vector<int64_t>();
    const auto tg = b.target.to_vector<float>();
    for (size_t k = 0; k < in.size(); ++k) {
      BOOST_TEST(in[k] == next++);
      BOOST_TEST(tg[k] == 2.0f * static_cast<float>(in[k]));
    }
  }
  BOOST_TEST(next == 7);
}

BOOST_AUTO_TEST_CASE(drop_last) {
  DataLoader keep(index_dataset(10), 3, true, 1, false);
  DataLoader drop(index_dataset(10), 3, true, 1, true);
  BOOST_TEST(keep.num_batches() == 4);
  BOOST_TEST(drop.num_batches() == 3);
  const auto kb = run_epoch(keep, 0), db = run_epoch(drop, 0);
  BOOST_TEST(kb.size() == 4u);
  BOOST_TEST(kb.back().size() == 1u);
  BOOST_TEST(db.size() == 3u);
  for (const auto& b : db) BOOST_TEST(b.size() == 3u);
  // Same seed: drop_last yields the first batches of the same order.
  for (size_t k = 0; k < db.size(); ++k) BOOST_TEST(db[k] == kb[k]);
  // A dataset smaller than one batch with drop_last: an empty epoch, not an error.
  DataLoader tiny(index_dataset(2), 3, false, 0, true);
  BOOST_TEST(run_epoch(tiny, 0).empty());
}

BOOST_AUTO_TEST_CASE(order_independent_of_prefetch_and_reproducible) {
  DataLoader p0(index_dataset(200), 16, true, 7, false, 0);
  DataLoader p4(index_dataset(200), 16, true, 7, false, 4);
  DataLoader again(index_dataset(200), 16, true, 7, false, 2);
  DataLoader other_seed(index_dataset(200), 16, true, 8, false, 2);
  for (int64_t e = 0; e < 3; ++e) {
    const auto a = run_epoch(p0, e);
    BOOST_TEST((a == run_epoch(p4, e)));
    BOOST_TEST((a == run_epoch(again, e)));
    BOOST_TEST((a != run_epoch(other_seed, e)));
  }
  BOOST_TEST((run_epoch(p0, 0) != run_epoch(p0, 1)));
  BOOST_TEST((run_epoch(p0, 1) != run_epoch(p0, 2)));
  BOOST_TEST((p0.order(5) == p4.order(5)));
}

BOOST_AUTO_TEST_CASE(worker_exception_propagates) {
  for (int64_t prefetch : {0, 2}) {
    auto ds = std::make_shared<TrickyDataset>(20, 13);
    DataLoader loader(ds, 4, false, 0, false, prefetch);
    int64_t batches = 0;
    try {
      for (const Batch& b : loader.epoch(0)) {
        (void)b;
        ++batches;
      }
      BOOST_ERROR("the broken example should have thrown");
    } catch (const Error& e) {
      BOOST_TEST(std::string(e.what()).find("example 13 is broken") != std::string::npos);
    }
    BOOST_TEST(batches == 3);  // batches 0..2 arrive; batch 3 holds index 13
    // next() after the error: the epoch is over.
    Epoch epoch = loader.epoch(0);
    for (int k = 0; k < 3; ++k) BOOST_TEST(epoch.next().has_value());
    BOOST_CHECK_THROW(epoch.next(), Error);
    BOOST_TEST(!epoch.next().has_value());
  }
}

BOOST_AUTO_TEST_CASE(early_break_does_not_hang) {
  auto ds = std::make_shared<TrickyDataset>(1000, -1, 2);  // 2 ms per example
  DataLoader loader(ds, 5, true, 3, false, 2);
  const auto start = std::chrono::steady_clock::now();
  int64_t seen = 0;
  for (const Batch& b : loader.epoch(0)) {
    BOOST_TEST(b.input.size(0) == 5);
    if (++seen == 2) break;
  }
  { Epoch unused = loader.epoch(1); }  // started, never read: destroyed at once
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST(seconds < 2.0);  // the whole epoch would take 2 s; stopping waits for one batch at most
  BOOST_TEST(ds->calls.load() < 100);
}

BOOST_AUTO_TEST_CASE(prefetch_queue_is_bounded) {
  auto ds = std::make_shared<TrickyDataset>(100, -1);
  DataLoader loader(ds, 1, false, 0, false, 3);
  Epoch epoch = loader.epoch(0);
  BOOST_TEST(epoch.next().has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // 1 consumed + 3 queued + at most 1 being built while waiting for room.
  BOOST_TEST(ds->calls.load() <= 5);
  int64_t rest = 0;
  while (epoch.next()) ++rest;
  BOOST_TEST(rest == 99);
}

BOOST_AUTO_TEST_CASE(moved_epoch_keeps_working) {
  DataLoader loader(index_dataset(9), 2, true, 5, false, 2);
  Epoch a = loader.epoch(0);
  Epoch b = std::move(a);
  int64_t count = 0;
  for (const Batch& batch : b) count += batch.input.size(0);
  BOOST_TEST(count == 9);
}

BOOST_AUTO_TEST_CASE(bad_options_are_errors) {
  expect_error([] { DataLoader(index_dataset(3), 0); }, {"batch_size"});
  expect_error([] { DataLoader(index_dataset(3), 1, false, 0, false, -1); }, {"prefetch"});
  expect_error([] { DataLoader(nullptr, 1); }, {"no dataset"});
}

BOOST_AUTO_TEST_SUITE_END()
