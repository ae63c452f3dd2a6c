// Named scenarios beside the conformance suite: each is a program shape a pool can get wrong in a
// way the conformance suite does not reach (the program fuzzer, tests/fuzz/, finds such shapes),
// run on every registered pool and lab variant. Each test says what goes wrong in a pool that
// lacks the guard it checks, and how the test then fails (or which sanitizer build reports it).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "registry/pools.hpp"
#include "stage5_parallel_algos/fork_join/join.hpp"
#include "stage5_parallel_algos/fork_join/stack_room.hpp"
#include "stage5_parallel_algos/futures/future.hpp"
#include "tests/flag.hpp"
#include "tests/sanitizer_reports.hpp"
#include "tests/test_scale.hpp"

namespace wslab {
namespace {

using test::Flag;

using test::fail_hung;

class Scenarios : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<IThreadPool> make(std::size_t threads) const {
    return make_pool(GetParam(), threads);
  }
};

// An outside thread submits a task that destroys the pool. The task may run, and the destructor
// finish, before the submitter has left submit() (it still has to wake a worker): the destructor
// must wait for it (TaskLedger::SubmitterStay). A destructor that does not wait lets the
// submitter's wake-up read (on stages 4 and 5 sometimes CAS) freed memory, which ThreadSanitizer
// and AddressSanitizer report within a few hundred rounds; in the Release build the race is
// silent, which is why CI runs this suite under both.
TEST_P(Scenarios, TaskDestroysItsPoolWhileTheSubmitterIsStillInsideSubmit) {
  const int rounds = kSanitized ? 300 : 2'000;
  test::keep_sanitizer_reports_on_stderr();
  ::testing::internal::CaptureStderr();  // one "destroyed from inside" diagnostic per round
  int destroyed_count = 0;
  for (int round = 0; round < rounds; ++round) {
    IThreadPool* pool = make_pool(GetParam(), 1 + round % 2).release();
    Flag destroyed;
    pool->submit([pool, &destroyed] {
      delete pool;
      destroyed.raise();
    });
    destroyed.wait();
    ++destroyed_count;
  }
  const std::string diagnostics = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(destroyed_count, rounds);
  EXPECT_NE(diagnostics.find("destroyed from inside one of its own tasks"), std::string::npos);
}

// Blocks each of the pool's `threads` workers in a task until `release` is raised, so that what is
// queued next waits for threads outside the pool (try_run_one()).
void block_every_worker(IThreadPool& pool, std::size_t threads, const Flag& release) {
  std::atomic<std::size_t> blocked{0};  // touched by the blockers only before this returns
  for (std::size_t i = 0; i < threads; ++i) {
    pool.submit([&blocked, &release] {
      blocked.fetch_add(1);
      release.wait();
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (blocked.load() != threads) {
    if (std::chrono::steady_clock::now() > deadline)
      fail_hung("the workers never took the blockers");
    std::this_thread::yield();
  }
}

// try_run_one() on this thread until it has run a task, which may destroy the pool.
void run_one_here(IThreadPool& pool) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pool.try_run_one()) {
    if (std::chrono::steady_clock::now() > deadline)
      fail_hung("try_run_one() never found the task");
  }
}

// A thread outside the pool takes a task with try_run_one() while every worker is busy, and the
// task destroys the pool (it first lets the workers go, or the destructor would wait for them
// forever). The destructor completes inside the task; try_run_one() must then return without
// touching the pool (for its counters, its ledger, a wake-up). One that does reads freed memory,
// which AddressSanitizer reports in the first round and ThreadSanitizer as a race with the
// destructor; the Release build may pass silently, which is why CI runs this suite under both.
TEST_P(Scenarios, TryRunOneFromOutsideRunsATaskThatDestroysThePool) {
  constexpr int kRounds = 20;
  test::keep_sanitizer_reports_on_stderr();
  ::testing::internal::CaptureStderr();  // one "destroyed from inside" diagnostic per round
  for (int round = 0; round < kRounds; ++round) {
    const std::size_t threads = 1 + std::size_t(round % 2);
    IThreadPool* pool = make_pool(GetParam(), threads).release();
    Flag release, destroyed;
    block_every_worker(*pool, threads, release);
    bool ran_by_us = false;
    pool->submit([pool, &release, &destroyed, &ran_by_us] {
      ran_by_us = true;
      release.raise();
      delete pool;
      destroyed.raise();
    });
    run_one_here(*pool);  // every worker is blocked: only this thread can run it
    EXPECT_TRUE(ran_by_us);
    EXPECT_TRUE(destroyed.raised()) << "the task ended before the pool's destruction did";
  }
  const std::string diagnostics = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(diagnostics.find("destroyed from inside one of its own tasks"), std::string::npos)
      << diagnostics;
}

// A task that try_run_one() runs inside another task of the pool, on the same thread, destroys the
// pool: two of its tasks are then in flight on the destroying thread, one inside the other, and
// neither can end before the destructor returns. On a worker (a one-worker pool, whose task runs
// the destroyer it queued) and on a thread outside the pool (its try_run_one() runs a task that
// runs the destroyer with try_run_one(), while the workers are blocked). A destructor that leaves
// only one task in flight to the destroying thread waits for the outer one forever: the watchdog
// ends the test.
TEST_P(Scenarios, TryRunOneInsideATaskRunsATaskThatDestroysThePool) {
  constexpr std::chrono::milliseconds kGiveUp{10'000};
  test::keep_sanitizer_reports_on_stderr();
  ::testing::internal::CaptureStderr();
  {  // On the only worker.
    IThreadPool* pool = make_pool(GetParam(), 1).release();
    // Shared: the outer task, on the detached worker, still reads it after this thread has seen
    // it raised and gone on.
    auto destroyed = std::make_shared<Flag>();
    pool->submit([pool, destroyed] {
      pool->submit([pool, destroyed] {
        delete pool;
        destroyed->raise();
      });
      while (!destroyed->raised())
        (void)pool->try_run_one();  // nobody else can run it
    });
    if (!destroyed->wait_for(kGiveUp)) fail_hung("a worker's nested task destroying the pool");
  }
  {  // On this thread, outside the pool.
    const std::size_t threads = 2;
    IThreadPool* pool = make_pool(GetParam(), threads).release();
    Flag release, destroyed;
    block_every_worker(*pool, threads, release);
    pool->submit([pool, &release, &destroyed] {
      pool->submit([pool, &release, &destroyed] {
        release.raise();
        delete pool;
        destroyed.raise();
      });
      // The workers are blocked until the destroyer runs: this thread runs it.
      while (!destroyed.raised())
        (void)pool->try_run_one();
    });
    run_one_here(*pool);
    EXPECT_TRUE(destroyed.raised());
  }
  const std::string diagnostics = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(diagnostics.find("destroyed from inside one of its own tasks"), std::string::npos)
      << diagnostics;
}

// join(pool, a, b) from outside the pool while every worker is busy: the calling thread runs b
// itself. b is a task of the pool whichever thread runs it (docs/reference.md, errors table), so
// wait_idle() inside it must throw std::logic_error. Were b run unmarked (join's generic path, on
// stages 1-4 and the lab pools), wait_idle() would block until the busy workers finished (here:
// until they give up after kGiveUp) and then return, and the test fails.
TEST_P(Scenarios, WaitIdleInsideJoinsSecondFunctionRunByTheCallerIsRefused) {
  constexpr auto kGiveUp = std::chrono::seconds(5);
  auto pool = make(2);
  Flag b_started, release;
  std::atomic<int> blocked{0};
  for (std::size_t i = 0; i < pool->thread_count(); ++i) {
    pool->submit([&] {
      blocked.fetch_add(1);
      // Bounded, so that a failing run ends: the release comes once b has started, or never.
      (void)release.wait_for(kGiveUp);
    });
  }
  while (blocked.load() != static_cast<int>(pool->thread_count()))
    std::this_thread::yield();
  bool refused = false;
  std::string what;
  join(
      *pool, [] {},
      [&] {
        b_started.raise();
        try {
          pool->wait_idle();
        } catch (const std::logic_error& e) {
          refused = true;
          what = e.what();
        }
        release.raise();
      });
  release.raise();
  pool->wait_idle();
  EXPECT_TRUE(b_started.raised());
  EXPECT_TRUE(refused) << "wait_idle() inside join's second function must be refused";
  EXPECT_NE(what.find("wait for itself"), std::string::npos) << what;
}

// How many times a join recursion moved to a fresh thread (stack_room.hpp) before reaching the
// innermost level, where `at_bottom` runs. Each level pins kPad bytes of stack, so that a move
// comes after a few hundred levels instead of tens of thousands (cheap under the sanitizers too).
constexpr std::size_t kPad = 16 * 1024;
constexpr int kMaxLevels = 1'500;  // about twice what two moves need (8 MiB stacks)

template <class F>
void recurse_until_moved(IThreadPool& pool, int moves_wanted, int moves_seen, int level,
                         std::thread::id previous, F& at_bottom) {
  std::array<char, kPad> pad;
  pad[0] = static_cast<char>(level);
  asm volatile("" : : "r"(pad.data()) : "memory");  // the pad stays on the stack
  const std::thread::id me = std::this_thread::get_id();
  if (me != previous) ++moves_seen;
  if (moves_seen > moves_wanted || level >= kMaxLevels) {
    at_bottom(moves_seen - 1, level);
    return;
  }
  join(
      pool, [&] { recurse_until_moved(pool, moves_wanted, moves_seen, level + 1, me, at_bottom); },
      [] {});
}

// A task recurses through join until the stack guard has moved the recursion to a fresh thread
// `moves` times, then calls wait_idle(). The fresh thread continues the task (the worker blocks
// until it ends), so wait_idle() there would wait for itself and must be refused. A fresh thread
// that carries neither the worker's identity nor the running-task mark (BlockedThreadRole gives
// it both) waits for the pool to go idle, which needs the very task blocked on that thread: a
// hang, which the test reports as a failure (stages 1-4 after one move; stage 5, whose first
// fresh thread takes the guest seat, after two).
void wait_idle_after_moves(IThreadPool& pool, int moves) {
  std::atomic<int> moved{-1}, levels{0};
  std::atomic<bool> refused{false};
  Flag done;
  auto at_bottom = [&](int moves_seen, int level) {
    moved = moves_seen;
    levels = level;
    try {
      pool.wait_idle();
    } catch (const std::logic_error&) {
      refused = true;
    }
  };
  pool.submit([&] {
    recurse_until_moved(pool, moves, 0, 0, std::thread::id{}, at_bottom);
    done.raise();
  });
  if (!done.wait_for(std::chrono::seconds(120))) {
    fail_hung("wait_idle() inside a join recursion moved to a fresh thread waited for itself");
  }
  pool.wait_idle();
  EXPECT_EQ(moved.load(), moves) << "the recursion was not moved (" << levels.load() << " levels)";
  EXPECT_TRUE(refused.load()) << "after " << moved.load() << " move(s)";
}

TEST_P(Scenarios, WaitIdleInsideATaskWhoseJoinRecursionMovedOnceIsRefused) {
  auto pool = make(1);
  wait_idle_after_moves(*pool, 1);
}

TEST_P(Scenarios, WaitIdleInsideATaskWhoseJoinRecursionMovedTwiceIsRefused) {
  auto pool = make(1);
  wait_idle_after_moves(*pool, 2);
}

// when_any() returns the lowest index among the inputs that are ready: that input's is_ready()
// holds when it returns. A job that completes while when_any() registers its waiter is the
// narrow case: if the state counted itself completed (and so told the late waiter at once) before
// setting the flag that is_ready() reads, when_any() would wake, find no ready input and return
// 0 anyway. The window is a few instructions wide (the program fuzzer needed half an hour under
// ThreadSanitizer to hit it once); this loop races the two steps many times, which catches it
// only now and then: the fix's argument is the ordering in FutureStateBase::complete().
TEST_P(Scenarios, WhenAnyReturnsAReadyInputWhenTheJobCompletesDuringRegistration) {
  auto pool = make(2);
  const int rounds = kSanitized ? 20'000 : 200'000;
  int not_ready = 0;
  for (int round = 0; round < rounds && not_ready == 0; ++round) {
    std::vector<Future<int>> futures;
    futures.push_back(async(*pool, [round] { return round; }));
    const std::size_t first = when_any(futures);
    if (first != 0 || !futures[0].is_ready()) ++not_ready;
    EXPECT_EQ(futures[0].get(), round);
  }
  EXPECT_EQ(not_ready, 0) << "when_any returned an input that is not ready";
}

std::string pool_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (std::size_t at = name.find(':'); at != std::string::npos; at = name.find(':', at))
    name.replace(at, 1, "__");
  return name;
}

std::vector<std::string> all_pools() {
  std::vector<std::string> names;
  for (auto n : pool_names())
    names.emplace_back(n);
  for (auto n : variant_names())
    names.emplace_back(n);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Pools, Scenarios, ::testing::ValuesIn(all_pools()), pool_test_name);

}  // namespace
}  // namespace wslab
