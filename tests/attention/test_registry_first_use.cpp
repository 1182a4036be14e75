// The registry's first use from many threads at once: every thread must see every built-in hook.
// Before the registry became a function-local static, a plain flag read outside call_once let a
// second thread return the registry while the first was still filling it (a short list, or a
// crash). CTest runs this case on its own (attention_registry_first_use), so that its threads
// really are the first users; inside the whole suite it still checks the list.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "attention/registry.h"

BOOST_AUTO_TEST_SUITE(registry_first_use)

BOOST_AUTO_TEST_CASE(threads_racing_to_first_use_all_see_every_builtin) {
  constexpr int kThreads = 16;
  std::atomic<int> waiting{kThreads};
  std::vector<std::vector<std::string>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      waiting.fetch_sub(1);
      while (waiting.load() > 0) {
      }  // start together
      seen[t] = posgrad::hook_names();
    });
  for (auto& th : threads) th.join();
  const std::vector<std::string> all = posgrad::hook_names();
  BOOST_TEST(all.size() >= 16u);
  for (int t = 0; t < kThreads; ++t) BOOST_TEST(seen[t] == all, "thread " << t << " saw " << seen[t].size());
}

BOOST_AUTO_TEST_SUITE_END()
