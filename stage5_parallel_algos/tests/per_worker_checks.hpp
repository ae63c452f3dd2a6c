// What the tests of this_worker_index() and PerWorker<T> share, on stage 5's own pools
// (stage5_parallel_algos/tests/per_worker_test.cpp) and on every registered pool
// (tests/algorithms/per_worker_test.cpp): running one task on every worker at once, what a
// thread reports about itself, a slot that remembers its users, and the calling thread's own slot
// through a parallel_for.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <thread>

#include "common/thread_pool.hpp"
#include "stage5_parallel_algos/algorithms/parallel_for.hpp"
#include "stage5_parallel_algos/algorithms/per_worker.hpp"
#include "stage5_parallel_algos/tests/algos_test_util.hpp"
#include "tests/test_scale.hpp"

namespace wslab::test {

// Runs f(t) in thread_count() tasks that all wait until every one of them has started: as no
// thread runs two of them at once, they run on thread_count() distinct threads. The calling
// thread only watches (wait_idle() does not run tasks), so those are the pool's workers.
template <class F>
void once_on_every_worker(IThreadPool& pool, F f) {
  const std::size_t n = pool.thread_count();
  std::atomic<std::size_t> started{0};
  std::atomic<bool> stuck{false};
  for (std::size_t t = 0; t < n; ++t) {
    pool.submit([&, t] {
      f(t);
      started.fetch_add(1);
      if (!eventually([&] { return started.load() == n; })) stuck = true;
    });
  }
  ASSERT_TRUE(eventually([&] { return started.load() == n; }))
      << "the pool never ran " << n << " tasks at once";
  pool.wait_idle();
  ASSERT_FALSE(stuck.load());
}

struct Report {
  std::thread::id thread;
  std::optional<std::size_t> index;      // this_worker_index(pool)
  std::optional<std::size_t> any_index;  // this_worker_index()
  bool owns = false;                     // pool.owns_current_thread()
};

inline Report report_here(const IThreadPool& pool) {
  return {std::this_thread::get_id(), this_worker_index(pool), this_worker_index(),
          pool.owns_current_thread()};
}

// What a slot remembers about its users. Not movable (an atomic member): the slot is built in
// place by the initializer.
struct Owned {
  std::atomic<int> inside{0};            // threads using the slot right now
  std::atomic<std::thread::id> owner{};  // the first thread that used it
  std::uint64_t uses = 0;                // written by the owner only, unless slots are shared
  std::uint64_t scribble = 0;            // work done while `inside`, to widen the window
};

// The calling thread has a slot of its own, the same before, during (when it runs pieces inline,
// on stage 5 seated as a guest) and after parallel_for. Returns how many indices it ran, and how
// many of those seated (owns_current_thread()).
struct CallerRan {
  std::size_t indices = 0;
  std::size_t seated = 0;
};
inline CallerRan check_the_callers_slot(IThreadPool& pool) {
  const std::size_t n = scaled(50'000, 5'000);
  PerWorker<std::uint64_t> count(pool);
  std::uint64_t& mine = count.local();
  mine = 1000;
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<std::size_t> on_caller{0}, seated{0}, elsewhere_than_mine{0};
  parallel_for(
      pool, std::size_t{0}, n,
      [&](std::size_t) {
        std::uint64_t& slot = count.local();
        if (std::this_thread::get_id() == caller) {
          on_caller.fetch_add(1, std::memory_order_relaxed);
          if (pool.owns_current_thread()) seated.fetch_add(1, std::memory_order_relaxed);
          if (&slot != &mine) elsewhere_than_mine.fetch_add(1, std::memory_order_relaxed);
        } else if (&slot == &mine) {
          elsewhere_than_mine.fetch_add(1, std::memory_order_relaxed);
        }
        slot += 1;
      },
      1);
  EXPECT_EQ(elsewhere_than_mine.load(), 0u);
  EXPECT_EQ(&count.local(), &mine);
  EXPECT_EQ(mine, 1000 + on_caller.load());
  EXPECT_EQ(count.combine(std::plus<>{}), 1000 + n);
  return {on_caller.load(), seated.load()};
}

}  // namespace wslab::test
