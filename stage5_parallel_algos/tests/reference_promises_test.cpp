// Promises of docs/reference.md that no other test checked: the errors of the future combinators
// and timed waits on an empty future, the coroutine calls of a ThreadPool whose destruction has
// begun (its member schedule() and run()), sync_wait of a CoTask started already, a worker whose
// start hook threw still taking work, and wait_until() following a clock that is set.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "stage5_parallel_algos/tests/algos_test_util.hpp"
#include "stage5_parallel_algos/threadpool.hpp"

namespace wslab {
namespace {

using test::Gate;

// --- empty futures ---------------------------------------------------------------------------

// when_all: std::invalid_argument for an empty vector and std::logic_error for an empty input
// future, whether default-constructed or moved from, and wherever it lies in the vector (for
// Future<void> as for a value).
TEST(ReferencePromisesEmptyFuture, WhenAllRefusesAnEmptyVectorAndAnEmptyInput) {
  ThreadPool pool(2);
  EXPECT_THROW((void)when_all(std::vector<Future<void>>{}), std::invalid_argument);

  std::vector<Future<int>> empty_first;
  empty_first.emplace_back();
  empty_first.push_back(pool.async([] { return 1; }));
  EXPECT_THROW((void)when_all(std::move(empty_first)), std::logic_error);

  Future<int> source = pool.async([] { return 2; });
  Future<int> taken = std::move(source);
  std::vector<Future<int>> moved_from_last;
  moved_from_last.push_back(pool.async([] { return 3; }));
  moved_from_last.push_back(std::move(source));  // NOLINT(bugprone-use-after-move): the point
  EXPECT_THROW((void)when_all(std::move(moved_from_last)), std::logic_error);

  std::vector<Future<void>> voids;
  voids.push_back(pool.async([] {}));
  voids.emplace_back();
  EXPECT_THROW((void)when_all(std::move(voids)), std::logic_error);
  EXPECT_EQ(taken.get(), 2);
}

// `co_await first_ready(...)`: std::invalid_argument for an empty vector, std::logic_error for an
// empty future in the vector or among the arguments; a refused call consumes nothing, so the
// valid inputs still give their values.
TEST(ReferencePromisesEmptyFuture, FirstReadyRefusesAnEmptyFutureAndConsumesNothing) {
  ThreadPool pool(2);
  std::vector<Future<int>> inputs;
  inputs.push_back(pool.async([] { return 10; }));
  inputs.emplace_back();
  Future<int> lone = pool.async([] { return 20; });
  Future<int> moved_from = pool.async([] { return 30; });
  Future<int> holder = std::move(moved_from);
  auto outcome = [&](auto call) -> CoTask<std::string> {
    try {
      (void)co_await call();
      co_return "returned";
    } catch (const std::invalid_argument&) {
      co_return "invalid_argument";
    } catch (const std::logic_error&) {
      co_return "logic_error";
    }
  };
  EXPECT_EQ(pool.run(outcome([] { return first_ready(std::vector<Future<int>>{}); })),
            "invalid_argument");
  EXPECT_EQ(pool.run(outcome([&] { return first_ready(inputs); })), "logic_error");
  // NOLINTNEXTLINE(bugprone-use-after-move): the point of the test
  auto moved_from_first = [&] { return first_ready(moved_from, lone); };
  EXPECT_EQ(pool.run(outcome(moved_from_first)), "logic_error");
  EXPECT_EQ(pool.run(outcome([&] { return first_ready(lone, inputs[1]); })), "logic_error");
  ASSERT_TRUE(inputs[0].valid());
  ASSERT_TRUE(lone.valid());
  EXPECT_EQ(inputs[0].get(), 10);
  EXPECT_EQ(lone.get(), 20);
  EXPECT_EQ(holder.get(), 30);
}

// wait_for() and wait_until() throw std::logic_error on an empty future: default-constructed,
// moved from, or consumed by get(); a timeout of zero or a deadline passed already changes
// nothing.
TEST(ReferencePromisesEmptyFuture, TimedWaitsThrowOnADefaultConstructedMovedFromOrConsumedFuture) {
  ThreadPool pool(1);
  Future<int> defaulted;
  Future<void> defaulted_void;
  Future<int> moved_from = pool.async([] { return 1; });
  Future<int> holder = std::move(moved_from);
  Future<int> consumed = pool.async([] { return 2; });
  EXPECT_EQ(consumed.get(), 2);
  const auto past = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  const auto future = std::chrono::system_clock::now() + std::chrono::seconds(1);
  for (Future<int>* f : {&defaulted, &moved_from, &consumed}) {  // NOLINT(bugprone-use-after-move)
    EXPECT_THROW((void)f->wait_for(std::chrono::seconds(0)), std::logic_error);
    EXPECT_THROW((void)f->wait_for(std::chrono::milliseconds(1)), std::logic_error);
    EXPECT_THROW((void)f->wait_until(past), std::logic_error);
    EXPECT_THROW((void)f->wait_until(future), std::logic_error);
  }
  EXPECT_THROW((void)defaulted_void.wait_for(std::chrono::milliseconds(1)), std::logic_error);
  EXPECT_THROW((void)defaulted_void.wait_until(past), std::logic_error);
  EXPECT_EQ(holder.get(), 1);
}

// A clock that the test sets, and that counts how often it is read.
struct SettableClock {
  using rep = std::int64_t;
  using period = std::micro;
  using duration = std::chrono::microseconds;
  using time_point = std::chrono::time_point<SettableClock>;
  [[maybe_unused]] static constexpr bool is_steady = false;  // std::chrono's Clock requirements
  static inline std::atomic<rep> now_us{0};
  static inline std::atomic<int> reads{0};
  static time_point now() noexcept {
    reads.fetch_add(1);
    return time_point(duration(now_us.load()));
  }
};

// wait_until() reads its clock again at least once a second, so that a clock set forward past the
// deadline (system_clock can be) ends the wait, though at its first read the deadline was an hour
// away. The clock moves only after that first read; a wait that slept until the deadline it first
// computed would not return for an hour (the test's timeout ends it).
TEST(ReferencePromisesTimedWait, WaitUntilFollowsAClockSetForwardPastTheDeadline) {
  ThreadPool pool(1);
  Gate release;
  Future<int> f = pool.async([&release] {
    release.wait();
    return 5;
  });
  SettableClock::now_us.store(0);
  SettableClock::reads.store(0);
  const SettableClock::time_point deadline{std::chrono::hours(1)};
  std::thread setter([] {
    while (SettableClock::reads.load() == 0)
      std::this_thread::yield();
    SettableClock::now_us.store(std::chrono::microseconds(std::chrono::hours(2)).count());
  });
  const std::future_status status = f.wait_until(deadline);
  setter.join();
  EXPECT_EQ(status, std::future_status::timeout);
  EXPECT_GE(SettableClock::reads.load(), 2);
  release.raise();
  EXPECT_EQ(f.get(), 5);
}

// --- a ThreadPool whose destruction has begun, from a thread outside it -----------------------

// What one coroutine saw, run by ThreadPool::run from the test's outside thread.
struct Sighting {
  bool started_on_pool = false;
  bool started_on_caller = false;
  std::optional<std::string> refusal;  // what `co_await pool.schedule()` threw
  bool after_refusal_on_caller = false;
  bool after_hop_on_pool = false;
};

// ThreadPool::run (sync_wait) from outside, once the pool's destruction has begun: the task starts
// on the calling thread and its result comes back. `co_await pool.schedule()` there, outside the
// pool: std::logic_error out of the co_await, the coroutine still on the calling thread. Until
// then each run starts on the workers and each hop lands there. A task holds the destructor's
// drain until the refusal, so the pool is not freed while the caller uses it.
TEST(ReferencePromisesAtDestruction, RunStartsOnTheCallerAndScheduleThrowsThereWithoutMoving) {
  auto pool = std::make_unique<ThreadPool>(2);
  ThreadPool* const p = pool.get();
  Gate refused;
  p->spawn([&refused] { refused.wait(); });
  std::optional<Sighting> last;
  int runs_on_pool = 0, hops_off_pool = 0;
  std::thread caller([&] {
    const std::thread::id me = std::this_thread::get_id();
    for (;;) {
      auto body = [&]() -> CoTask<Sighting> {
        Sighting s;
        s.started_on_pool = p->scheduler().owns_current_thread();
        s.started_on_caller = std::this_thread::get_id() == me;
        try {
          co_await p->schedule();
          s.after_hop_on_pool = p->scheduler().owns_current_thread();
        } catch (const std::logic_error& e) {
          s.refusal = e.what();
          s.after_refusal_on_caller = std::this_thread::get_id() == me;
        }
        co_return s;
      };
      Sighting s = p->run(body());
      if (s.started_on_pool && !s.refusal) {
        ++runs_on_pool;
        if (!s.after_hop_on_pool) ++hops_off_pool;
        continue;
      }
      last = std::move(s);
      refused.raise();
      return;
    }
  });
  pool.reset();
  caller.join();
  ASSERT_TRUE(last.has_value());
  EXPECT_FALSE(last->started_on_pool);
  EXPECT_TRUE(last->started_on_caller) << "a refused run() started its task elsewhere";
  ASSERT_TRUE(last->refusal.has_value()) << "schedule() from the caller was accepted";
  EXPECT_FALSE(last->refusal->empty());
  EXPECT_TRUE(last->after_refusal_on_caller) << "the refused coroutine left the calling thread";
  EXPECT_EQ(hops_off_pool, 0) << "of " << runs_on_pool << " runs accepted by the pool";
}

// --- sync_wait of a CoTask started already ----------------------------------------------------

// sync_wait / ThreadPool::run of a CoTask that has been started (awaited) already throws
// std::logic_error and does not run it again, whether called from outside the pool or from one
// of its workers. A coroutine awaits its child and hands the started child back as its result.
TEST(ReferencePromisesCoTask, SyncWaitOfAStartedTaskThrowsAndRunsNothingAgain) {
  ThreadPool pool(2);
  std::atomic<int> ran{0};
  auto counted = [&]() -> CoTask<int> {
    ran.fetch_add(1);
    co_return 5;
  };
  auto start_and_hand_back = [&]() -> CoTask<CoTask<int>> {
    CoTask<int> child = counted();
    const int v = co_await std::move(child);
    EXPECT_EQ(v, 5);
    co_return std::move(child);  // NOLINT(bugprone-use-after-move): awaited, still held
  };

  CoTask<int> started = pool.run(start_and_hand_back());
  ASSERT_TRUE(started.valid()) << "the awaited child was not handed back";
  ASSERT_EQ(ran.load(), 1);
  EXPECT_THROW((void)pool.run(std::move(started)), std::logic_error);
  EXPECT_EQ(ran.load(), 1);

  // From a worker: a coroutine that run() started there (the outside caller only sleeps).
  CoTask<int> started_again = pool.run(start_and_hand_back());
  ASSERT_EQ(ran.load(), 2);
  auto on_a_worker = [&]() -> CoTask<std::pair<bool, std::string>> {
    const bool on_worker = pool.scheduler().owns_current_thread();
    try {
      (void)sync_wait(pool.scheduler(), std::move(started_again));
      co_return std::pair{on_worker, std::string("returned")};
    } catch (const std::logic_error&) {
      co_return std::pair{on_worker, std::string("logic_error")};
    }
  };
  const auto [on_worker, outcome] = pool.run(on_a_worker());
  EXPECT_TRUE(on_worker);
  EXPECT_EQ(outcome, "logic_error");
  EXPECT_EQ(ran.load(), 2);
}

// --- a throwing worker start hook -----------------------------------------------------------

// What a worker's on_worker_start throws is printed on stderr and ignored: that very worker
// still takes work. Both hooks throw; two tasks that each wait until both run (a deadline turns
// a dead worker into a failure, not a hang) must run on the two workers, so each worker whose
// hook threw ran one.
TEST(ReferencePromisesWorkerStartHook, EachWorkerWhoseHookThrewStillRunsATask) {
  PoolOptions options;
  options.on_worker_start = [](std::size_t index) {
    throw std::runtime_error("start hook of worker " + std::to_string(index) + " refused");
  };
  testing::internal::CaptureStderr();
  std::set<std::size_t> ran_on;
  int met = 0;
  {
    ThreadPool pool(2, options);
    std::atomic<int> arrived{0};
    std::optional<std::size_t> index[2];
    bool both_ran[2] = {false, false};
    for (std::size_t t = 0; t < 2; ++t) {
      pool.spawn([&, t] {
        index[t] = pool.this_worker_index();
        arrived.fetch_add(1);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (arrived.load() < 2 && std::chrono::steady_clock::now() < deadline)
          std::this_thread::yield();
        both_ran[t] = arrived.load() == 2;
      });
    }
    pool.wait_all();
    for (std::size_t t = 0; t < 2; ++t) {
      if (index[t]) ran_on.insert(*index[t]);
      met += both_ran[t] ? 1 : 0;
    }
  }  // joined: both hooks have run and printed
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(met, 2) << "the two tasks never ran at once: a worker is not taking work";
  EXPECT_EQ(ran_on, (std::set<std::size_t>{0, 1}));
  EXPECT_NE(err.find("start hook of worker 0 refused"), std::string::npos) << err;
  EXPECT_NE(err.find("start hook of worker 1 refused"), std::string::npos) << err;
}

}  // namespace
}  // namespace wslab
