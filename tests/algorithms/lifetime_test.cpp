// Futures and task groups at the edges of their pool's life, and their newer calls, on every
// registered pool: outliving the pool, a pool that refuses them while it is destroyed, waiting for
// the pool from inside a task run inline, empty callables, exceptions nobody collects, timed waits,
// when_any and cancellation.
#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "stage5_parallel_algos/coro/resume_on_pool.hpp"
#include "stage5_parallel_algos/coro/sync_wait.hpp"
#include "stage5_parallel_algos/fork_join/join.hpp"
#include "stage5_parallel_algos/fork_join/task_group.hpp"
#include "stage5_parallel_algos/fork_join/worker_ref.hpp"
#include "stage5_parallel_algos/futures/future.hpp"
#include "stage5_parallel_algos/tests/algos_test_util.hpp"
#include "tests/on_every_pool.hpp"

namespace wslab {
namespace {

using test::OnEveryPool;
using test::TestFailure;

using test::Gate;

// Occupies every worker of a pool until release(): what is queued afterwards stays queued, so
// the calling thread is the one that runs it inline (get(), TaskGroup::wait()).
class BusyWorkers {
 public:
  BusyWorkers(IThreadPool& pool, std::size_t workers) {
    for (std::size_t i = 0; i < workers; ++i) {
      pool.submit([this] {
        started_.fetch_add(1);
        started_.notify_all();
        free_.wait();
      });
    }
    for (int n = started_.load(); n < static_cast<int>(workers); n = started_.load())
      started_.wait(n);
  }
  ~BusyWorkers() { release(); }
  void release() { free_.raise(); }

 private:
  std::atomic<int> started_{0};
  Gate free_;
};

// What wait_idle() did when called from inside a task: "returned", or the logic_error's text.
std::string try_wait_idle(IThreadPool& pool) {
  try {
    pool.wait_idle();
    return "returned";
  } catch (const std::logic_error& e) {
    return e.what();
  }
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// --- a future or a group that outlives its pool ------------------------------------------------

class FutureOutlivesPool : public OnEveryPool {};
class GroupOutlivesPool : public OnEveryPool {};

TEST_P(FutureOutlivesPool, ThenThrowsLogicErrorAndGetStillWorks) {
  auto pool = make(2);
  auto value = async(*pool, [] { return 42; });
  auto failed = async(*pool, []() -> int { throw TestFailure("kept"); });
  pool.reset();  // the destructor runs both jobs first
  ASSERT_TRUE(value.is_ready());
  try {
    (void)value.then([](int x) { return x + 1; });
    FAIL() << "then() on a future whose pool is gone must throw";
  } catch (const std::logic_error& e) {
    EXPECT_TRUE(contains(e.what(), "destroyed")) << e.what();
  }
  EXPECT_TRUE(value.valid()) << "a refused then() must leave the future usable";
  EXPECT_EQ(value.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  value.wait();
  EXPECT_EQ(value.get(), 42);
  EXPECT_THROW((void)failed.then([](int x) { return x; }), std::logic_error);
  EXPECT_THROW(failed.get(), TestFailure);
}

TEST_P(FutureOutlivesPool, WhenAllAndWhenAnyCombineOnTheCallingThread) {
  auto pool = make(2);
  std::vector<Future<int>> inputs;
  for (int i = 0; i < 4; ++i)
    inputs.push_back(async(*pool, [i] { return i * i; }));
  auto a = async(*pool, [] { return 5; });
  auto b = async(*pool, [] { return std::string("six"); });
  pool.reset();
  EXPECT_EQ(when_any(inputs), 0u);
  EXPECT_EQ(when_any(a, b), 0u);
  const std::vector<int> squares = when_all(std::move(inputs)).get();
  EXPECT_EQ(squares, (std::vector<int>{0, 1, 4, 9}));
  EXPECT_EQ(a.get(), 5);
  EXPECT_EQ(b.get(), "six");
}

// A job the test thread runs inline (get()) finishes after the pool's destructor has begun: the
// continuation it releases is refused and runs here, and waits until the pool is gone; the next
// continuation must then run here too, without asking the destroyed pool (AddressSanitizer
// reports the touch as a heap-use-after-free). The busy worker holds the destructor until the
// first continuation has been refused: released any earlier, the destructor could finish while
// the job is still releasing that continuation, which would then submit to a pool under
// destruction (a race the reference leaves to the caller; AddressSanitizer found it here).
TEST_P(FutureOutlivesPool, ContinuationsReleasedAfterARefusalNeverTouchThePool) {
  auto pool = make(1);
  IThreadPool* const p = pool.get();
  Gate job_started, pool_destroyed;
  BusyWorkers busy(*p, 1);  // the job stays queued, so get() runs it on this thread
  const std::thread::id me = std::this_thread::get_id();
  std::thread::id last_ran_on;
  auto last = async(*p,
                    [&] {
                      job_started.raise();
                      for (;;) {  // until the destructor refuses outsiders
                        try {
                          p->submit([] {});
                        } catch (const std::logic_error&) {
                          break;
                        }
                        std::this_thread::yield();
                      }
                      return 1;
                    })
                  .then([&](int x) {
                    busy.release();  // refused already: lets the destructor drain and finish
                    pool_destroyed.wait();
                    return x + 1;
                  })
                  .then([&](int x) {
                    last_ran_on = std::this_thread::get_id();
                    return x * 10;
                  });
  std::thread destroyer([&] {
    job_started.wait();
    pool.reset();
    pool_destroyed.raise();
  });
  EXPECT_EQ(last.get(), 20);
  EXPECT_EQ(last_ran_on, me);
  destroyer.join();
}

TEST_P(GroupOutlivesPool, RunThrowsLogicErrorAndWaitStillWorks) {
  auto pool = make(2);
  std::atomic<int> ran{0};
  TaskGroup group(*pool);
  for (int i = 0; i < 100; ++i)
    group.run([&ran] { ran.fetch_add(1); });
  group.run([] { throw TestFailure("collected after the pool is gone"); });
  pool.reset();  // runs every queued callable
  EXPECT_EQ(ran.load(), 100);
  try {
    group.run([&ran] { ran.fetch_add(1); });
    FAIL() << "run() on a group whose pool is gone must throw";
  } catch (const std::logic_error& e) {
    EXPECT_TRUE(contains(e.what(), "destroyed")) << e.what();
  }
  EXPECT_THROW(group.wait(), TestFailure);
  EXPECT_NO_THROW(group.wait());
  EXPECT_EQ(ran.load(), 100);
}

// The group's owner keeps running callables while another thread destroys the pool: run() is
// refused with its own name, and wait() then returns once the accepted callables have run,
// without helping the pool. A task holds the destructor's drain until the refusal.
TEST_P(GroupOutlivesPool, RunRefusedDuringDestructionSaysSoAndWaitStillWorks) {
  auto pool = make(2);
  IThreadPool* const p = pool.get();
  TaskGroup group(*p);
  Gate refused;
  std::atomic<int> accepted{0}, ran{0};
  std::string refusal;
  p->submit([&refused] { refused.wait(); });
  std::thread owner([&] {
    for (;;) {
      try {
        group.run([&ran] { ran.fetch_add(1); });
        accepted.fetch_add(1);
      } catch (const std::logic_error& e) {
        refusal = e.what();
        refused.raise();
        return;
      }
    }
  });
  pool.reset();
  owner.join();
  EXPECT_TRUE(contains(refusal, "wslab::TaskGroup::run")) << refusal;
  EXPECT_NO_THROW(group.wait());
  EXPECT_EQ(ran.load(), accepted.load());
}

// --- coroutines meeting a pool whose destruction has begun --------------------------------------

class CoroutinesAtDestruction : public OnEveryPool {};

// `co_await schedule(pool)` from outside the pool once its destruction has begun: std::logic_error
// out of the co_await, the coroutine still where it was (a worker of another pool). Until then
// each hop lands on the pool. A task holds the destructor's drain until the refusal.
TEST_P(CoroutinesAtDestruction, ScheduleIsRefusedAndTheCoroutineStaysWhereItWas) {
  auto pool = make(2);
  IThreadPool* const p = pool.get();
  auto other = make(1);
  Gate refused;
  std::atomic<int> hops{0}, hops_elsewhere{0};
  std::string refusal;
  bool stayed = false;
  p->submit([&refused] { refused.wait(); });
  auto hopper = [&]() -> CoTask<void> {
    for (;;) {
      try {
        co_await schedule(*p);
      } catch (const std::logic_error& e) {
        refusal = e.what();
        stayed = other->owns_current_thread();
        refused.raise();
        co_return;
      }
      if (!p->owns_current_thread()) hops_elsewhere.fetch_add(1);
      hops.fetch_add(1);
      co_await schedule(*other);
    }
  };
  std::thread driver([&] { sync_wait(*other, hopper()); });
  pool.reset();
  driver.join();
  EXPECT_FALSE(refusal.empty());
  EXPECT_TRUE(stayed) << "the refused coroutine left its thread";
  EXPECT_EQ(hops_elsewhere.load(), 0) << "of " << hops.load() << " accepted hops";
}

// sync_wait from outside the pool once its destruction has begun: the task starts on the calling
// thread instead and still finishes; until then it runs on the pool's workers.
TEST_P(CoroutinesAtDestruction, SyncWaitRefusedStartsTheTaskOnTheCallingThread) {
  auto pool = make(2);
  IThreadPool* const p = pool.get();
  Gate refused;
  std::atomic<int> on_the_pool{0}, elsewhere{0};
  p->submit([&refused] { refused.wait(); });
  std::thread caller([&] {
    const std::thread::id me = std::this_thread::get_id();
    for (;;) {
      auto where = [&]() -> CoTask<int> {
        co_return p->owns_current_thread() ? 1 : std::this_thread::get_id() == me ? 2 : 0;
      };
      const int ran = sync_wait(*p, where());
      if (ran == 1) {
        on_the_pool.fetch_add(1);
        continue;
      }
      if (ran == 0) elsewhere.fetch_add(1);
      refused.raise();
      return;
    }
  });
  pool.reset();
  caller.join();
  EXPECT_EQ(elsewhere.load(), 0) << "a task ran neither on the pool nor on its caller";
}

WSLAB_INSTANTIATE_ON_EVERY_POOL(FutureOutlivesPool);
WSLAB_INSTANTIATE_ON_EVERY_POOL(GroupOutlivesPool);
WSLAB_INSTANTIATE_ON_EVERY_POOL(CoroutinesAtDestruction);

// --- waiting for the pool from inside one of its tasks, run inline -----------------------------

class WaitInsideTask : public OnEveryPool {};

TEST_P(WaitInsideTask, WaitIdleInAnAsyncJobThatGetRunsInlineIsRefused) {
  auto pool = make(1);
  BusyWorkers busy(*pool, 1);
  const std::thread::id me = std::this_thread::get_id();
  bool ran_here = false;
  auto outcome = async(*pool, [&] {
    ran_here = std::this_thread::get_id() == me;
    busy.release();  // were the wait allowed, it could now return
    return try_wait_idle(*pool);
  });
  const std::string what = outcome.get();
  EXPECT_TRUE(ran_here) << "the test needs get() to run the job inline";
  EXPECT_TRUE(contains(what, "wait_idle")) << what;
  EXPECT_NO_THROW(pool->wait_idle());
}

TEST_P(WaitInsideTask, WaitIdleInAGroupCallableThatWaitRunsInlineIsRefused) {
  auto pool = make(1);
  BusyWorkers busy(*pool, 1);
  const std::thread::id me = std::this_thread::get_id();
  bool ran_here = false;
  std::string what;
  TaskGroup group(*pool);
  group.run([&] {
    ran_here = std::this_thread::get_id() == me;
    busy.release();
    what = try_wait_idle(*pool);
  });
  group.wait();
  EXPECT_TRUE(ran_here) << "the test needs wait() to run the callable inline";
  EXPECT_TRUE(contains(what, "wait_idle")) << what;
  // Outside any task again: allowed.
  EXPECT_NO_THROW(pool->wait_idle());
}

// join's halves and with_worker's root are tasks of the pool whichever thread runs them and
// whichever path the fork takes (a worker, the guest seat, a join handed to the workers and taken
// back, or b queued as a job while a runs here): inside each, waiting for the pool is refused.
TEST_P(WaitInsideTask, WaitIdleInBothHalvesOfAnOutsideJoinIsRefused) {
  auto pool = make(1);
  BusyWorkers busy(*pool, 1);
  const std::thread::id me = std::this_thread::get_id();
  bool a_ran_here = false;
  const auto [in_a, in_b] = join(
      *pool,
      [&] {
        a_ran_here = std::this_thread::get_id() == me;
        busy.release();
        return try_wait_idle(*pool);
      },
      [&] { return try_wait_idle(*pool); });
  EXPECT_TRUE(a_ran_here) << "the test needs a to run on the calling thread";
  EXPECT_TRUE(contains(in_a, "wait_idle")) << in_a;
  EXPECT_TRUE(contains(in_b, "wait_idle")) << in_b;
  EXPECT_NO_THROW(pool->wait_idle());
}

TEST_P(WaitInsideTask, WaitIdleInAWithWorkerRootIsRefused) {
  auto pool = make(1);
  BusyWorkers busy(*pool, 1);  // no guest seat: the root's handle is off the workers
  const std::string what = with_worker(*pool, [&](WorkerRef w) {
    EXPECT_FALSE(w.on_worker());
    busy.release();
    return try_wait_idle(*pool);
  });
  EXPECT_TRUE(contains(what, "wait_idle")) << what;
  EXPECT_NO_THROW(pool->wait_idle());
}

WSLAB_INSTANTIATE_ON_EVERY_POOL(WaitInsideTask);

// --- empty callables ---------------------------------------------------------------------------

class EmptyCallable : public OnEveryPool {};

TEST_P(EmptyCallable, AsyncThenAndRunRefuseItAtTheCall) {
  auto pool = make(2);
  int (*null_int)() = nullptr;
  EXPECT_THROW(async(*pool, null_int), std::invalid_argument);
  EXPECT_THROW(async(*pool, std::function<int()>{}), std::invalid_argument);
  auto f = async(*pool, [] { return 1; });
  int (*null_next)(int) = nullptr;
  EXPECT_THROW((void)f.then(null_next), std::invalid_argument);
  EXPECT_THROW((void)f.then(std::function<int(int)>{}), std::invalid_argument);
  ASSERT_TRUE(f.valid());
  EXPECT_EQ(f.get(), 1);
  TaskGroup group(*pool);
  void (*null_void)() = nullptr;
  try {
    group.run(null_void);
    FAIL() << "run() of a null function pointer must throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "TaskGroup::run")) << e.what();
  }
  EXPECT_THROW(group.run(std::function<void()>{}), std::invalid_argument);
  EXPECT_NO_THROW(group.wait());
  EXPECT_NO_THROW(pool->wait_idle());
}

WSLAB_INSTANTIATE_ON_EVERY_POOL(EmptyCallable);

// --- exceptions nobody collects ----------------------------------------------------------------

class UncollectedExceptions : public OnEveryPool {};

TEST_P(UncollectedExceptions, AFailedFutureDestroyedUnreadIsReportedOnStderr) {
  auto pool = make(2);
  ::testing::internal::CaptureStderr();
  {
    auto unread = async(*pool, []() -> int { throw TestFailure("token-unread"); });
    unread.wait();
    auto read = async(*pool, []() -> int { throw TestFailure("token-read"); });
    EXPECT_THROW(read.get(), TestFailure);
    auto passed_on = async(*pool, []() -> int {
                       throw TestFailure("token-passed-on");
                     }).then([](int x) { return x; });
    EXPECT_THROW(passed_on.get(), TestFailure);
    auto fine = async(*pool, [] { return 1; });
    fine.wait();
  }
  pool->wait_idle();  // a state is freed by whoever lets go last, perhaps a queued trampoline
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(err, "token-unread")) << err;
  EXPECT_FALSE(contains(err, "token-read")) << err;
  EXPECT_FALSE(contains(err, "token-passed-on")) << err;
}

TEST_P(UncollectedExceptions, WhenAllReportsTheFailuresItDrops) {
  auto pool = make(2);
  std::vector<Future<int>> inputs;
  inputs.push_back(async(*pool, []() -> int { throw TestFailure("token-first"); }));
  inputs.push_back(async(*pool, [] { return 1; }));
  inputs.push_back(async(*pool, []() -> int { throw TestFailure("token-second"); }));
  inputs.push_back(async(*pool, []() -> int { throw TestFailure("token-third"); }));
  ::testing::internal::CaptureStderr();
  try {
    (void)when_all(std::move(inputs)).get();
    ADD_FAILURE() << "when_all lost the failures";
  } catch (const TestFailure& e) {
    EXPECT_STREQ(e.what(), "token-first");
  }
  pool->wait_idle();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(err, "drops the other 2")) << err;
  EXPECT_TRUE(contains(err, "token-second")) << err;
  EXPECT_FALSE(contains(err, "token-first")) << err;
}

TEST_P(UncollectedExceptions, GroupCountsWhatEachWaitDiscardsAndReportsWhatNobodyCollects) {
  auto pool = make(2);
  TaskGroup group(*pool);
  for (int i = 0; i < 3; ++i)
    group.run([] { throw TestFailure("three"); });
  EXPECT_THROW(group.wait(), TestFailure);
  EXPECT_EQ(group.dropped_exceptions(), 2u);
  group.run([] { throw TestFailure("one"); });
  EXPECT_THROW(group.wait(), TestFailure);
  EXPECT_EQ(group.dropped_exceptions(), 0u)
      << "the count is the last wait()'s, not a running total";
  group.run([] {});
  EXPECT_NO_THROW(group.wait());
  EXPECT_EQ(group.dropped_exceptions(), 0u);

  ::testing::internal::CaptureStderr();
  {
    TaskGroup unwaited(*pool);
    unwaited.run([] { throw TestFailure("token-group"); });
    unwaited.run([] { throw TestFailure("token-group"); });
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(err, "token-group")) << err;
  EXPECT_TRUE(contains(err, "2 exception(s)")) << err;
}

WSLAB_INSTANTIATE_ON_EVERY_POOL(UncollectedExceptions);

// --- timed waits and when_any ------------------------------------------------------------------

class FutureWaits : public OnEveryPool {};

TEST_P(FutureWaits, WaitForTimesOutWithoutSpinningThenSeesTheValue) {
  auto pool = make(2);
  Gate started, finish;
  auto f = async(*pool, [&] {
    started.raise();
    finish.wait();
    return 7;
  });
  started.wait();  // running on a worker: wait_for() has nothing to run itself
  const auto timeout = std::chrono::milliseconds(200);
  const double cpu_before = thread_cpu_seconds();
  const auto wall_before = std::chrono::steady_clock::now();
  EXPECT_EQ(f.wait_for(timeout), std::future_status::timeout);
  const auto waited = std::chrono::steady_clock::now() - wall_before;
  const double cpu = thread_cpu_seconds() - cpu_before;
  EXPECT_GE(waited, timeout);
  EXPECT_LT(cpu, 0.05) << "a timed wait must sleep, not spin: " << cpu << " s of CPU in 200 ms";
  EXPECT_EQ(f.wait_until(std::chrono::system_clock::now() - std::chrono::seconds(1)),
            std::future_status::timeout);
  EXPECT_FALSE(f.is_ready());
  finish.raise();
  const auto woken_before = std::chrono::steady_clock::now();
  EXPECT_EQ(f.wait_for(std::chrono::hours(1)), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - woken_before, std::chrono::seconds(30))
      << "the wait must end when the job completes, not at the timeout";
  EXPECT_EQ(f.wait_until(std::chrono::steady_clock::time_point::max()), std::future_status::ready);
  EXPECT_EQ(f.get(), 7);
  EXPECT_THROW((void)f.wait_for(std::chrono::seconds(1)), std::logic_error);
}

TEST_P(FutureWaits, WhenAnyReturnsTheLowestReadyIndexAndConsumesNothing) {
  auto pool = make(2);
  Gate started, finish;
  std::vector<Future<int>> futures;
  futures.push_back(async(*pool, [&] {
    started.raise();
    finish.wait();
    return 0;
  }));
  started.wait();  // running elsewhere, so when_any cannot pick it to run inline
  futures.push_back(async(*pool, [] { return 1; }));
  futures.push_back(async(*pool, []() -> int { throw TestFailure("ready too"); }));
  const std::size_t first = when_any(futures);
  EXPECT_TRUE(first == 1 || first == 2) << first;
  for (const Future<int>& f : futures)
    EXPECT_TRUE(f.valid());
  EXPECT_EQ(futures[1].get(), 1);
  EXPECT_THROW(futures[2].get(), TestFailure);
  // Only the running one is left: when_any sleeps until another thread completes it.
  std::thread opener([&] { finish.raise(); });
  EXPECT_EQ(when_any(futures[0]), 0u);
  opener.join();
  EXPECT_EQ(futures[0].get(), 0);
  auto text = async(*pool, [] { return std::string("text"); });
  auto nothing = async(*pool, [] {});
  nothing.wait();
  const std::size_t mixed = when_any(text, nothing);
  EXPECT_TRUE(mixed == 0 || mixed == 1) << mixed;
  EXPECT_THROW(when_any(std::vector<Future<int>>{}), std::invalid_argument);
  EXPECT_THROW(when_any(futures), std::logic_error);  // all consumed by get()
  EXPECT_EQ(text.get(), "text");
}

TEST_P(FutureWaits, WhenAnyInsideATaskOnOneThreadRunsAnInputItself) {
  auto pool = make(1);
  std::size_t index = 99;
  int value = 0;
  pool->submit([&] {
    auto a = async(*pool, [] { return 5; });
    auto b = async(*pool, [] { return 6; });
    index = when_any(a, b);  // the only worker is this one: it must run an input itself
    value = index == 0 ? a.get() : b.get();
  });
  pool->wait_idle();
  EXPECT_EQ(index, 0u);
  EXPECT_EQ(value, 5);
}

WSLAB_INSTANTIATE_ON_EVERY_POOL(FutureWaits);

// --- cancellation ------------------------------------------------------------------------------

class GroupCancellation : public OnEveryPool {};

TEST_P(GroupCancellation, UnstartedCallablesAndLaterRunsAreSkippedUntilWaitReturns) {
  auto pool = make(2);
  TaskGroup group(*pool);
  Gate started, finish;
  std::atomic<bool> started_one_finished{false};
  std::atomic<int> skipped_ran{0};
  BusyWorkers busy(*pool, 1);  // one worker is busy; the other takes the started callable
  group.run([&] {
    started.raise();
    finish.wait();
    started_one_finished.store(true);
  });
  started.wait();  // every worker is busy now: what follows stays queued
  for (int i = 0; i < 100; ++i)
    group.run([&] { skipped_ran.fetch_add(1); });
  EXPECT_FALSE(group.is_cancelled());
  group.cancel();
  EXPECT_TRUE(group.is_cancelled());
  group.run([&] { skipped_ran.fetch_add(1); });  // dropped: the group is cancelled
  finish.raise();
  busy.release();
  group.wait();
  EXPECT_TRUE(started_one_finished.load()) << "wait() returns once started callables finish";
  EXPECT_EQ(skipped_ran.load(), 0) << "a cancelled group's unstarted callables must not run";
  EXPECT_FALSE(group.is_cancelled()) << "wait() resets the cancellation";
  // Reusable: a new round runs as usual.
  std::atomic<int> ran{0};
  for (int i = 0; i < 10; ++i)
    group.run([&] { ran.fetch_add(1); });
  group.wait();
  EXPECT_EQ(ran.load(), 10);
  pool->wait_idle();
}

TEST_P(GroupCancellation, RunningCallablesSeeItAndTheirExceptionsStillReachWait) {
  auto pool = make(2);
  TaskGroup group(*pool);
  Gate started;
  group.run([&] {
    started.raise();
    while (!group.is_cancelled())  // a long loop that stops early when asked
      std::this_thread::yield();
    throw TestFailure("stopped early");
  });
  started.wait();
  std::thread canceller([&] { group.cancel(); });
  EXPECT_THROW(group.wait(), TestFailure);
  canceller.join();
  EXPECT_FALSE(group.is_cancelled());
}

TEST_P(GroupCancellation, ACallableMayCancelItsOwnGroup) {
  auto pool = make(1);
  std::atomic<int> ran{0};
  pool->submit([&] {
    TaskGroup group(*pool);
    group.run([&] {
      ran.fetch_add(1);
      group.cancel();
      for (int i = 0; i < 10; ++i)  // dropped: added after the cancellation
        group.run([&] { ran.fetch_add(100); });
    });
    group.wait();
  });
  pool->wait_idle();
  EXPECT_EQ(ran.load(), 1);
}

WSLAB_INSTANTIATE_ON_EVERY_POOL(GroupCancellation);

}  // namespace
}  // namespace wslab
