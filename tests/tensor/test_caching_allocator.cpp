// The caching host allocator (tensor/cpu/caching_allocator.h): size classes, reuse of freed
// blocks, alignment, statistics, a training loop that reaches a state without system
// allocations, several threads at once, the cap on cached bytes, empty_cache, the retry when the
// system refuses memory, and the poison switch. The allocator is one per process and other test
// cases leave blocks in it, so every check here is on differences of the counters, and the
// cases that need a known cache start with cpu_empty_cache().
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "autograd/functions.h"
#include "nn/adam.h"
#include "nn/linear.h"
#include "nn/losses.h"
#include "tensor/cpu/caching_allocator.h"
#include "tensor/ops.h"
#include "tensor/random.h"
#include "tests/test_support.h"

using namespace posgrad;
using posgrad::test::check_error;

namespace {

// Every case runs with a 1 GiB cap and poison off, whatever POSGRAD_CPU_CACHE_LIMIT and
// POSGRAD_CPU_ALLOC_POISON say; the settings are restored after it, even when it fails.
struct KnownAllocatorSettings {
  size_t limit = cpu_cache_limit();
  bool poison = cpu_alloc_poison();
  KnownAllocatorSettings() {
    set_cpu_cache_limit(size_t{1} << 30);
    set_cpu_alloc_poison(false);
  }
  ~KnownAllocatorSettings() {
    set_cpu_cache_limit(limit);
    set_cpu_alloc_poison(poison);
  }
};

bool aligned64(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

}  // namespace

BOOST_FIXTURE_TEST_SUITE(caching_allocator, KnownAllocatorSettings)

BOOST_AUTO_TEST_CASE(size_classes_round_up_by_64_bytes_then_by_quarter_powers_of_two) {
  using cpu::size_class;
  BOOST_TEST(size_class(1) == 64u);
  BOOST_TEST(size_class(64) == 64u);
  BOOST_TEST(size_class(65) == 128u);
  BOOST_TEST(size_class(4096) == 4096u);
  BOOST_TEST(size_class(4097) == 5120u);    // 4 KiB * 5/4
  BOOST_TEST(size_class(6000) == 6144u);    // 4 KiB * 6/4
  BOOST_TEST(size_class(8192) == 8192u);
  BOOST_TEST(size_class(8193) == 10240u);   // 8 KiB * 5/4
  BOOST_TEST(size_class((size_t{1} << 20) + 1) == (size_t{5} << 18));  // 1.25 MiB
  BOOST_TEST(size_class(size_t{3} << 29) == (size_t{3} << 29));      // 1.5 GiB is a class
  // Over a sweep: never smaller than the request, a multiple of 64, monotone, and the slack is
  // below 64 bytes (up to 4 KiB) or at most a quarter of the request (above).
  size_t previous = 0;
  for (size_t n = 1; n < (size_t{1} << 26); n = n < 8192 ? n + 1 : n + n / 97 + 1) {
    const size_t c = size_class(n);
    BOOST_REQUIRE(c >= n);
    BOOST_REQUIRE(c % 64 == 0);
    BOOST_REQUIRE(c >= previous);
    if (n <= 4096) BOOST_REQUIRE(c - n < 64);
    else BOOST_REQUIRE(4 * (c - n) <= n);
    previous = c;
  }
}

BOOST_AUTO_TEST_CASE(a_freed_block_serves_the_next_request_of_its_class) {
  cpu_empty_cache();
  const CpuMemoryStats s0 = cpu_memory_stats();
  const void* first = nullptr;
  {
    Tensor a = Tensor::empty({1000, 300});  // 1,200,000 bytes: class 1,310,720 (1 MiB * 5/4)
    first = a.raw_data();
  }
  const CpuMemoryStats s1 = cpu_memory_stats();
  BOOST_TEST(s1.system_allocs - s0.system_allocs == 1);
  BOOST_TEST(s1.bytes_cached - s0.bytes_cached == 1310720);
  BOOST_TEST(s1.blocks_cached - s0.blocks_cached == 1);
  {
    Tensor b = Tensor::empty({1100, 290});  // 1,276,000 bytes: the same class
    BOOST_TEST(b.raw_data() == first);
    Tensor c = Tensor::empty({1000, 300});  // the list is empty now: a new block
    BOOST_TEST(c.raw_data() != first);
  }
  const CpuMemoryStats s2 = cpu_memory_stats();
  BOOST_TEST(s2.system_allocs - s1.system_allocs == 1);
  BOOST_TEST(s2.cache_hits - s1.cache_hits == 1);
  BOOST_TEST(s2.bytes_cached - s0.bytes_cached == 2 * 1310720);
  {
    Tensor d = Tensor::empty({1000, 1000});  // another class: not served by those two blocks
    BOOST_TEST(d.raw_data() != first);
  }
  BOOST_TEST(cpu_memory_stats().system_allocs - s2.system_allocs == 1);
}

BOOST_AUTO_TEST_CASE(blocks_are_64_byte_aligned_new_or_reused) {
  std::vector<void*> blocks;
  std::vector<size_t> sizes;
  for (size_t n : {1, 7, 63, 64, 65, 100, 4095, 4097, 5000, 100000, 3000000}) {
    blocks.push_back(cpu::cached_allocate(n));
    sizes.push_back(n);
  }
  for (void* p : blocks) BOOST_TEST(aligned64(p));
  for (size_t i = 0; i < blocks.size(); ++i) cpu::cached_release(blocks[i], sizes[i]);
  for (size_t i = 0; i < sizes.size(); ++i) {  // now from the free lists
    void* p = cpu::cached_allocate(sizes[i]);
    BOOST_TEST(aligned64(p));
    cpu::cached_release(p, sizes[i]);
  }
  // Tensors of odd sizes and dtypes too.
  for (int64_t n : {1, 3, 17, 1001}) {
    BOOST_TEST(aligned64(Tensor::empty({n}, kFloat32).raw_data()));
    BOOST_TEST(aligned64(Tensor::empty({n}, kFloat64).raw_data()));
    BOOST_TEST(aligned64(Tensor::empty({n}, kInt64).raw_data()));
  }
}

BOOST_AUTO_TEST_CASE(statistics_count_bytes_in_use_cached_peak_and_system_calls) {
  cpu_empty_cache();
  cpu_reset_peak_memory();
  const CpuMemoryStats s0 = cpu_memory_stats();
  BOOST_TEST(s0.bytes_cached == 0);
  BOOST_TEST(s0.blocks_cached == 0);
  BOOST_TEST(s0.peak_bytes_in_use == s0.bytes_in_use);

  void* a = cpu::cached_allocate(100);      // class 128
  void* b = cpu::cached_allocate(300000);   // class 327,680 (256 KiB * 5/4)
  CpuMemoryStats s = cpu_memory_stats();
  BOOST_TEST(s.bytes_in_use - s0.bytes_in_use == 128 + 327680);
  BOOST_TEST(s.system_allocs - s0.system_allocs == 2);
  BOOST_TEST(s.peak_bytes_in_use - s0.bytes_in_use == 128 + 327680);

  cpu::cached_release(b, 300000);
  s = cpu_memory_stats();
  BOOST_TEST(s.bytes_in_use - s0.bytes_in_use == 128);
  BOOST_TEST(s.bytes_cached == 327680);
  BOOST_TEST(s.blocks_cached == 1);
  BOOST_TEST(s.peak_bytes_in_use - s0.bytes_in_use == 128 + 327680);  // the peak stays

  void* c = cpu::cached_allocate(290000);  // the same class: a hit, no system call
  s = cpu_memory_stats();
  BOOST_TEST(c == b);
  BOOST_TEST(s.system_allocs - s0.system_allocs == 2);
  BOOST_TEST(s.cache_hits - s0.cache_hits == 1);
  BOOST_TEST(s.bytes_cached == 0);

  cpu::cached_release(a, 100);
  cpu::cached_release(c, 290000);
  cpu_reset_peak_memory();
  s = cpu_memory_stats();
  BOOST_TEST(s.bytes_in_use == s0.bytes_in_use);
  BOOST_TEST(s.peak_bytes_in_use == s0.bytes_in_use);
  BOOST_TEST(s.bytes_cached == 128 + 327680);
  BOOST_TEST(s.system_frees == s0.system_frees);  // nothing went back to the system yet
  cpu_empty_cache();
  s = cpu_memory_stats();
  BOOST_TEST(s.bytes_cached == 0);
  BOOST_TEST(s.system_frees - s0.system_frees == 2);
}

BOOST_AUTO_TEST_CASE(a_training_loop_reaches_a_steady_state_without_system_allocations) {
  // An MLP [B, 32] -> 64 -> 64 -> 5 with cross-entropy and Adam on a fixed batch: after warm-up
  // every step allocates exactly what the previous one freed.
  Generator gen(3);
  Linear fc1(32, 64, gen), fc2(64, 64, gen), fc3(64, 5, gen);
  std::vector<Variable> params;
  for (Module* m : std::vector<Module*>{&fc1, &fc2, &fc3})
    for (const Variable& p : m->parameters()) params.push_back(p);
  Adam opt(params, AdamOptions{});
  Tensor x = uniform({16, 32}, -1, 1, gen);
  Tensor labels = Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0}, {16});
  std::vector<double> losses;
  auto step = [&] {
    opt.zero_grad();
    Variable loss = cross_entropy(fc3.forward(relu(fc2.forward(relu(fc1.forward(Variable(x)))))), labels);
    loss.backward();
    opt.step();
    losses.push_back(loss.value().item());
  };
  for (int i = 0; i < 3; ++i) step();
  const CpuMemoryStats warm = cpu_memory_stats();
  for (int i = 0; i < 10; ++i) {
    step();
    const CpuMemoryStats s = cpu_memory_stats();
    BOOST_TEST(s.system_allocs == warm.system_allocs, "step " << i << " made "
               << s.system_allocs - warm.system_allocs << " system allocations");
    BOOST_TEST(s.bytes_in_use == warm.bytes_in_use);  // nothing leaks from step to step
  }
  BOOST_TEST(cpu_memory_stats().cache_hits - warm.cache_hits > 100);  // every op's output was reused
  BOOST_TEST(losses.back() < losses.front());  // and it trains: reused blocks hold no stale values
}

BOOST_AUTO_TEST_CASE(threads_allocating_and_freeing_at_once_never_share_a_block) {
  const CpuMemoryStats s0 = cpu_memory_stats();
  constexpr int kThreads = 4, kRounds = 3000;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      std::mt19937 rng(t);
      std::vector<std::pair<uint32_t*, size_t>> live;  // blocks held, filled with the owner's mark
      for (int r = 0; r < kRounds; ++r) {
        if (live.size() < 8 && (live.empty() || rng() % 2 == 0)) {
          const size_t words = 1 + rng() % 20000;  // up to 80 KB: a few classes shared by all
          auto* p = static_cast<uint32_t*>(cpu::cached_allocate(words * 4));
          std::fill(p, p + words, static_cast<uint32_t>(t * 1000003 + words));
          live.emplace_back(p, words);
        } else {
          const size_t i = rng() % live.size();
          auto [p, words] = live[i];
          const uint32_t mark = static_cast<uint32_t>(t * 1000003 + words);
          if (!std::all_of(p, p + words, [mark](uint32_t v) { return v == mark; })) failures[t] += 1;
          cpu::cached_release(p, words * 4);
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
        }
      }
      for (auto [p, words] : live) cpu::cached_release(p, words * 4);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) BOOST_TEST(failures[t] == 0, "thread " << t << " saw its block overwritten");
  const CpuMemoryStats s1 = cpu_memory_stats();
  BOOST_TEST(s1.bytes_in_use == s0.bytes_in_use);
  BOOST_TEST(s1.cache_hits > s0.cache_hits);
  // Every block is either cached or back with the system: the counters agree with each other.
  BOOST_TEST((s1.system_allocs - s1.system_frees) - (s0.system_allocs - s0.system_frees) ==
             s1.blocks_cached - s0.blocks_cached);
}

BOOST_AUTO_TEST_CASE(the_cap_sends_overflow_back_to_the_system_and_empty_cache_clears_all) {
  cpu_empty_cache();
  set_cpu_cache_limit(1 << 20);  // 1 MiB
  BOOST_TEST(cpu_cache_limit() == size_t{1} << 20);
  const CpuMemoryStats s0 = cpu_memory_stats();
  void* a = cpu::cached_allocate(600000);  // class 655,360
  void* b = cpu::cached_allocate(600000);
  void* c = cpu::cached_allocate(2000);    // class 2,048
  cpu::cached_release(a, 600000);          // cached: 655,360
  cpu::cached_release(b, 600000);          // would make 1,310,720 > 1 MiB: to the system
  cpu::cached_release(c, 2000);            // fits: 657,408
  CpuMemoryStats s = cpu_memory_stats();
  BOOST_TEST(s.bytes_cached == 655360 + 2048);
  BOOST_TEST(s.system_frees - s0.system_frees == 1);

  set_cpu_cache_limit(100000);  // lowering the cap trims, largest class first
  s = cpu_memory_stats();
  BOOST_TEST(s.bytes_cached == 2048);
  BOOST_TEST(s.system_frees - s0.system_frees == 2);

  set_cpu_cache_limit(0);  // no caching at all: every release goes to the system
  BOOST_TEST(cpu_memory_stats().bytes_cached == 0);
  void* d = cpu::cached_allocate(100);
  cpu::cached_release(d, 100);
  BOOST_TEST(cpu_memory_stats().bytes_cached == 0);
  BOOST_TEST(cpu_memory_stats().system_frees - s0.system_frees == 4);

  set_cpu_cache_limit(size_t{1} << 30);
  {
    std::vector<Tensor> held;  // five blocks alive at once, then all cached
    for (int i = 0; i < 5; ++i) held.push_back(Tensor::empty({1000 + 100 * i, 100}));
  }
  BOOST_TEST(cpu_memory_stats().blocks_cached >= 5);
  cpu_empty_cache();
  BOOST_TEST(cpu_memory_stats().bytes_cached == 0);
  BOOST_TEST(cpu_memory_stats().blocks_cached == 0);
}

BOOST_AUTO_TEST_CASE(a_refused_allocation_empties_the_cache_and_retries_before_failing) {
  { Tensor keep = Tensor::empty({1 << 20}); }  // at least one block cached
  BOOST_REQUIRE(cpu_memory_stats().bytes_cached > 0);
  const CpuMemoryStats s0 = cpu_memory_stats();
  // 1 PiB: more than the address space of x86-64 user processes, so the system always refuses.
  check_error([] { cpu::cached_allocate(size_t{1} << 50); }, {"out of host memory", "1125899906842624"});
  const CpuMemoryStats s1 = cpu_memory_stats();
  BOOST_TEST(s1.bytes_cached == 0);
  BOOST_TEST(s1.system_frees - s0.system_frees == s0.blocks_cached);
  BOOST_TEST(s1.bytes_in_use == s0.bytes_in_use);
  BOOST_TEST(s1.system_allocs == s0.system_allocs);
}

BOOST_AUTO_TEST_CASE(reused_blocks_are_not_zeroed_but_zeros_and_full_still_are) {
  set_cpu_alloc_poison(true);  // every block handed out is filled with 0xFF first
  Tensor e = Tensor::empty({3000});
  BOOST_TEST(std::isnan(e.to_vector<float>()[0]));
  BOOST_TEST(std::isnan(e.to_vector<float>()[2999]));
  BOOST_TEST(Tensor::empty({5}, kInt64).to_vector<int64_t>()[4] == -1);
  const std::vector<float> z = Tensor::zeros({3000}).to_vector<float>();
  BOOST_TEST(std::all_of(z.begin(), z.end(), [](float v) { return v == 0.0f; }));
  const std::vector<double> f = Tensor::full({77}, 2.5, kFloat64).to_vector<double>();
  BOOST_TEST(std::all_of(f.begin(), f.end(), [](double v) { return v == 2.5; }));
  set_cpu_alloc_poison(false);
}

BOOST_AUTO_TEST_CASE(byte_sizes_parse_with_binary_suffixes_and_bad_ones_are_named) {
  BOOST_TEST(cpu::parse_byte_size("0") == 0u);
  BOOST_TEST(cpu::parse_byte_size("123") == 123u);
  BOOST_TEST(cpu::parse_byte_size("64K") == 65536u);
  BOOST_TEST(cpu::parse_byte_size("512M") == size_t{512} << 20);
  BOOST_TEST(cpu::parse_byte_size("8G") == size_t{8} << 30);
  BOOST_TEST(cpu::parse_byte_size("8GiB") == size_t{8} << 30);
  for (const char* bad : {"", "G", "8T", "-1", "1.5G", "eight", "8 G"})
    check_error([bad] { cpu::parse_byte_size(bad); }, {"not a byte size", "e.g. 8G"});
}

BOOST_AUTO_TEST_SUITE_END()
