// The conformance suite: what every IThreadPool must do, run against every registered pool and
// every lab variant (each knob position of each stage). Registering a pool in registry/pools.cpp
// (and its name in CMakeLists.txt) is all it takes for it to be checked. Each test states the
// invariant it checks.
#include <gtest/gtest.h>
#include <time.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "registry/pools.hpp"
#include "tests/exactly_once.hpp"
#include "tests/flag.hpp"
#include "tests/test_scale.hpp"
#include "tests/until_refused.hpp"

namespace wslab {
namespace {

// Sizes shrink under the sanitizers (10-50x slower) and in unoptimised builds.
using test::scaled;

using test::Flag;

using RunCounts = test::ExactlyOnce;  // each of n tasks ran exactly once

class Conformance : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<IThreadPool> make(std::size_t threads) const {
    return make_pool(GetParam(), threads);
  }
};

// E external items, each submitting R recursive items from inside the pool; every one of the
// E * (1 + R) items must run exactly once.
void run_grid(IThreadPool& pool, std::size_t external, std::size_t recursive) {
  RunCounts counts(external * (1 + recursive));
  for (std::size_t e = 0; e < external; ++e) {
    pool.submit([&pool, &counts, e, recursive] {
      const std::size_t base = e * (1 + recursive);
      counts.mark(base);
      for (std::size_t r = 1; r <= recursive; ++r) {
        pool.submit([&counts, i = base + r] { counts.mark(i); });
      }
    });
  }
  pool.wait_idle();
  counts.expect_each_once();
}

TEST_P(Conformance, Smoke) {
  auto pool = make(2);
  // A lab variant "<stage>:<knob>" reports its stage's name; a lab's own pool its full name.
  const std::string name(pool->name());
  EXPECT_TRUE(GetParam() == name || GetParam().starts_with(name + ":"))
      << "name() is \"" << name << "\" for registered \"" << GetParam() << "\"";
  EXPECT_EQ(pool->thread_count(), 2u);
  EXPECT_FALSE(pool->owns_current_thread());
  std::atomic<int> ran{0};
  pool->submit([&] { ran.fetch_add(1); });
  pool->wait_idle();
  EXPECT_EQ(ran.load(), 1);
}

TEST_P(Conformance, ManyTasksRunExactlyOnce) {
  auto pool = make(0);
  RunCounts counts(scaled(200'000, 20'000));
  for (std::size_t i = 0; i < counts.size(); ++i)
    pool->submit([&counts, i] { counts.mark(i); });
  pool->wait_idle();
  counts.expect_each_once();
  EXPECT_EQ(pool->stats().tasks_executed(), counts.size());
}

TEST_P(Conformance, RecursiveGrids) {
  auto pool = make(0);
  for (auto [e, r] : {std::pair<std::size_t, std::size_t>{10'000, 0},
                      {1'000, 10},
                      {100, 100},
                      {10, 1'000},
                      {1, 10'000}}) {
    SCOPED_TRACE(std::to_string(e) + " external x " + std::to_string(r) + " recursive");
    run_grid(*pool, e, r);
  }
}

TEST_P(Conformance, EightExternalSubmittersAtOnce) {
  auto pool = make(0);
  constexpr std::size_t kSubmitters = 8;
  const std::size_t per = scaled(20'000, 2'000);
  RunCounts counts(kSubmitters * per);
  Flag go;
  std::vector<std::thread> submitters;
  for (std::size_t s = 0; s < kSubmitters; ++s) {
    submitters.emplace_back([&, s] {
      go.wait();  // all start together, to collide on the submission path
      for (std::size_t i = 0; i < per; ++i) {
        pool->submit([&counts, k = s * per + i] { counts.mark(k); });
      }
    });
  }
  go.raise();
  for (auto& t : submitters)
    t.join();
  pool->wait_idle();
  counts.expect_each_once();
}

TEST_P(Conformance, OversubscribedSixteenThreads) {
  auto pool = make(16);
  EXPECT_EQ(pool->thread_count(), 16u);
  run_grid(*pool, 200, 50);
  EXPECT_EQ(pool->stats().workers.size(), 16u);
}

TEST_P(Conformance, LargeAndMoveOnlyCaptures) {
  auto pool = make(2);
  std::atomic<std::uint64_t> sum{0};
  auto alive = std::make_shared<int>(0);  // counts captured copies still alive
  constexpr std::size_t kTasks = 1'000;
  for (std::size_t i = 0; i < kTasks; ++i) {
    std::array<std::uint64_t, 64> big{};  // 512 bytes: far beyond the inline buffer
    big.fill(i);
    auto owned = std::make_unique<std::uint64_t>(i);  // move-only
    pool->submit([&sum, big, owned = std::move(owned), alive] {
      sum.fetch_add(std::accumulate(big.begin(), big.end(), std::uint64_t{0}) + *owned);
    });
  }
  pool->wait_idle();
  // sum over i of (64 i + i) = 65 * kTasks (kTasks - 1) / 2
  EXPECT_EQ(sum.load(), 65u * kTasks * (kTasks - 1) / 2);
  EXPECT_EQ(alive.use_count(), 1) << "every captured copy must have been destroyed";
}

TEST_P(Conformance, ExceptionsAreRethrownAndNoTaskIsLost) {
  auto pool = make(2);
  constexpr int kTasks = 1'000;
  std::atomic<int> completed{0};
  for (int i = 0; i < kTasks; ++i) {
    pool->submit([&completed, i] {
      if (i % 10 == 3) throw std::runtime_error("task " + std::to_string(i) + " failed");
      completed.fetch_add(1);
    });
  }
  try {
    pool->wait_idle();
    FAIL() << "wait_idle() should rethrow a task's exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("failed"), std::string::npos);
  }
  EXPECT_EQ(completed.load(), kTasks - kTasks / 10) << "the other tasks must all complete";
  EXPECT_NO_THROW(pool->wait_idle()) << "an exception is reported once";

  // The workers survived: the pool still runs everything.
  run_grid(*pool, 100, 10);
}

TEST_P(Conformance, NonStdExceptionsAreRethrownAsIs) {
  auto pool = make(1);
  pool->submit([] { throw 42; });
  try {
    pool->wait_idle();
    FAIL() << "expected the int to be rethrown";
  } catch (int v) {
    EXPECT_EQ(v, 42);
  }
}

TEST_P(Conformance, RepeatedWaitIdleCycles) {
  auto pool = make(0);
  std::atomic<std::size_t> ran{0};
  const std::size_t cycles = scaled(2'000, 300);
  for (std::size_t c = 1; c <= cycles; ++c) {
    const std::size_t batch = c % 7;  // includes empty batches: wait_idle on an idle pool
    for (std::size_t i = 0; i < batch; ++i)
      pool->submit([&ran] { ran.fetch_add(1); });
    pool->wait_idle();
    ASSERT_EQ(ran.exchange(0), batch) << "cycle " << c;
  }
}

// Idle -> one task -> idle, many times. A lost wake-up shows up as a hang (ctest's timeout),
// so the loop also checks progress against a generous deadline and fails with a message.
TEST_P(Conformance, NoLostWakeUpFromIdle) {
  auto pool = make(0);
  const std::size_t cycles = scaled(20'000, 2'000);
  for (std::size_t c = 0; c < cycles; ++c) {
    Flag done;
    pool->submit([&done] { done.raise(); });
    done.wait();
    pool->wait_idle();
  }
}

// A task queues a child (recursively, so it lands in the worker's own queue in stages 2-4) and
// then waits for it without helping: only another worker can run the child, so the submission
// must have woken one. Repeated to hit the window where the other worker is falling asleep.
TEST_P(Conformance, NoLostWakeUpForStealableWork) {
  auto pool = make(2);
  const std::size_t cycles = scaled(5'000, 500);
  for (std::size_t c = 0; c < cycles; ++c) {
    std::atomic<bool> child_ran{false};
    std::atomic<bool> timed_out{false};
    pool->submit([&] {
      pool->submit([&child_ran] {
        child_ran.store(true, std::memory_order_release);
        child_ran.notify_one();
      });
      if (!test::eventually([&] { return child_ran.load(std::memory_order_acquire); })) {
        timed_out = true;
        // Runs the child here, so that the test fails instead of hanging.
        while (!child_ran.load(std::memory_order_acquire)) {
          if (!pool->try_run_one()) std::this_thread::yield();
        }
      }
    });
    pool->wait_idle();
    ASSERT_FALSE(timed_out.load()) << "cycle " << c << ": the other worker never took the child";
  }
}

TEST_P(Conformance, DestructorDrainsABacklogThatKeepsSpawning) {
  std::atomic<std::size_t> ran{0};
  constexpr std::size_t kRoots = 50, kDepth = 200;
  {
    auto pool = make(2);
    IThreadPool* p = pool.get();
    // Each root starts a chain: every link queues the next one, recursively.
    struct Link {
      static void run(IThreadPool* pool, std::atomic<std::size_t>* ran, std::size_t left) {
        ran->fetch_add(1);
        if (left > 1) pool->submit([=] { run(pool, ran, left - 1); });
      }
    };
    for (std::size_t r = 0; r < kRoots; ++r)
      p->submit([p, &ran] { Link::run(p, &ran, kDepth); });
    // No wait_idle: the destructor must run every link of every chain.
  }
  EXPECT_EQ(ran.load(), kRoots * kDepth);
}

TEST_P(Conformance, TryRunOneFromOutside) {
  auto pool = make(1);
  Flag worker_busy, release_worker;
  pool->submit([&] {
    worker_busy.raise();
    release_worker.wait();  // keep the only worker occupied
  });
  worker_busy.wait();
  constexpr int kTasks = 10;
  std::atomic<int> ran_here{0};
  const auto me = std::this_thread::get_id();
  for (int i = 0; i < kTasks; ++i) {
    pool->submit([&ran_here, me] { ran_here += std::this_thread::get_id() == me; });
  }
  int helped = 0;
  while (pool->try_run_one())
    ++helped;
  EXPECT_EQ(helped, kTasks);
  EXPECT_EQ(ran_here.load(), kTasks) << "try_run_one must run the task on the calling thread";
  EXPECT_FALSE(pool->try_run_one()) << "nothing queued: must return false at once";
  release_worker.raise();
  pool->wait_idle();
  EXPECT_EQ(pool->stats().tasks_run_outside, static_cast<std::uint64_t>(kTasks));
}

TEST_P(Conformance, WaitIdleFromAWorkerThrowsLogicError) {
  auto pool = make(2);
  std::atomic<int> refused{0};
  pool->submit([&] {
    EXPECT_TRUE(pool->owns_current_thread());
    try {
      pool->wait_idle();
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("wait_idle"), std::string::npos) << e.what();
      refused.fetch_add(1);
    }
  });
  pool->wait_idle();
  EXPECT_EQ(refused.load(), 1);
}

// An empty task (default-constructed or moved-from, or built from a null function pointer or an
// empty std::function: task.hpp) is refused at the call, from outside and from inside the pool, and
// nothing is queued: before, a worker crashed on it later.
TEST_P(Conformance, SubmitOfAnEmptyTaskIsRefusedAtTheCall) {
  auto pool = make(2);
  std::vector<Task> empties;
  empties.emplace_back();
  empties.emplace_back(static_cast<void (*)()>(nullptr));
  empties.emplace_back(std::function<void()>{});
  for (Task& empty : empties) {
    EXPECT_FALSE(empty);
    try {
      pool->submit(std::move(empty));
      ADD_FAILURE() << "an empty task was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::string(pool->name())), std::string::npos)
          << e.what();
    }
  }
  std::atomic<int> refused_inside{0};
  pool->submit([&] {
    try {
      pool->submit(Task{});
    } catch (const std::invalid_argument&) {
      refused_inside.fetch_add(1);
    }
  });
  pool->wait_idle();  // nothing empty was counted: the pool goes idle
  EXPECT_EQ(refused_inside.load(), 1);
  std::atomic<int> ran{0};
  pool->submit([&ran] { ran.fetch_add(1); });
  pool->wait_idle();
  EXPECT_EQ(ran.load(), 1);
}

// wait_idle() from inside a task is refused whichever thread runs the task: here the calling
// thread runs it with try_run_one() while the only worker is busy. Allowed, it would wait for
// itself (the task is in flight) and never return.
TEST_P(Conformance, WaitIdleInsideATaskRunByTryRunOneFromOutsideIsRefused) {
  auto pool = make(1);
  Flag worker_started, worker_free;
  pool->submit([&] {
    worker_started.raise();
    worker_free.wait();
  });
  worker_started.wait();
  const std::thread::id me = std::this_thread::get_id();
  bool ran_here = false;
  std::string outcome;
  pool->submit([&] {
    ran_here = std::this_thread::get_id() == me;
    worker_free.raise();
    try {
      pool->wait_idle();
      outcome = "returned";
    } catch (const std::logic_error& e) {
      outcome = e.what();
    }
  });
  EXPECT_TRUE(pool->try_run_one());
  EXPECT_TRUE(ran_here);
  EXPECT_NE(outcome.find("wait_idle"), std::string::npos) << outcome;
  EXPECT_NO_THROW(pool->wait_idle());  // outside any task: allowed
}

// lifetime() expires exactly when the destructor has completed: tasks still running in the drain
// see the pool alive, the test thread afterwards sees it gone, and a new pool (which may reuse the
// record) does not revive the old handle.
TEST_P(Conformance, LifetimeExpiresOnlyOnceDestructionHasCompleted) {
  EXPECT_TRUE(PoolLifetime{}.expired());
  auto pool = make(2);
  IThreadPool* const p = pool.get();
  const PoolLifetime life = p->lifetime();
  EXPECT_FALSE(life.expired());
  Flag destruction_began;
  std::atomic<int> alive_in_drain{0};
  for (int i = 0; i < 4; ++i) {
    p->submit([&destruction_began, &alive_in_drain, life] {
      destruction_began.wait();
      alive_in_drain.fetch_add(life.expired() ? 0 : 1);
    });
  }
  std::thread prober([&destruction_began, p] {
    test::submit_until_refused([p] { p->submit([] {}); });
    destruction_began.raise();
  });
  pool.reset();
  prober.join();
  EXPECT_EQ(alive_in_drain.load(), 4);
  EXPECT_TRUE(life.expired());
  auto next = make(1);
  EXPECT_FALSE(next->lifetime().expired());
  EXPECT_TRUE(life.expired());
}

// Destruction begins while a task is still running. An outside thread keeps submitting: each
// submission is either accepted (and then must run) or refused with std::logic_error once the
// destructor has begun. The running task also submits recursively during the drain: accepted.
TEST_P(Conformance, SubmitAfterDestructionBeganIsRefusedButDrainingContinues) {
  std::atomic<std::size_t> accepted{0}, ran{0}, recursive_ran{0};
  std::string refusal;
  Flag task_started, refused;
  auto pool = make(2);
  IThreadPool* p = pool.get();
  p->submit([&, p] {
    task_started.raise();
    refused.wait();  // hold the destructor in its drain until the outsider was refused
    for (int i = 0; i < 100; ++i)
      p->submit([&recursive_ran] { recursive_ran.fetch_add(1); });
  });
  task_started.wait();
  std::thread outsider([&, p] {
    // The refusal has its own type (SubmitRefused, a std::logic_error).
    const test::Refusal r =
        test::submit_until_refused([&] { p->submit([&ran] { ran.fetch_add(1); }); });
    accepted.store(r.accepted);
    refusal = r.message;
    refused.raise();
  });
  pool.reset();  // blocks until everything accepted has run
  outsider.join();
  EXPECT_EQ(ran.load(), accepted.load()) << "every accepted task must run";
  EXPECT_EQ(recursive_ran.load(), 100u) << "recursive submissions during the drain must run";
  EXPECT_NE(refusal.find("destruction"), std::string::npos) << refusal;
}

// The same for a task that a thread outside the pool took with try_run_one(): the task is the
// pool's and counted, so what it submits while the destructor drains is its own work, accepted and
// run, as a worker's is. The one worker is held in a task of its own until try_run_one() has
// returned: so that try_run_one() finds the outsider's task, and so that the destructor, which
// does not wait for a thread inside try_run_one(), cannot end before that thread has left it.
TEST_P(Conformance, ATaskTakenWithTryRunOneSubmitsDuringTheDrain) {
  constexpr std::size_t kChildren = 100;
  std::atomic<std::size_t> children{0};
  Flag worker_held, release_worker, taken, refused;
  auto pool = make(1);
  IThreadPool* p = pool.get();
  p->submit([&] {
    worker_held.raise();
    release_worker.wait();
  });
  worker_held.wait();
  p->submit([&, p] {
    taken.raise();
    refused.wait();
    for (std::size_t i = 0; i < kChildren; ++i)
      p->submit([&children] { children.fetch_add(1); });
  });
  std::thread taker([p, &release_worker] {
    while (!p->try_run_one()) {
    }
    release_worker.raise();
  });
  taken.wait();
  std::thread outsider([&, p] {
    test::submit_until_refused([p] { p->submit([] {}); });
    refused.raise();
  });
  pool.reset();
  taker.join();
  outsider.join();
  EXPECT_EQ(children.load(), kChildren) << "a counted task's submissions during the drain must run";
}

// A visit (PoolVisit) open when the destructor begins keeps the pool from being freed: the
// destructor closes the pool to new visits at once (the probe below is refused, so this test knows
// destruction has begun without sleeping) and completes only after the open visit has ended. The
// second half cannot fail where the destructor waits; where it did not (wait_out_visits() made a
// no-op), the pool would expire within the grace below, with nothing else left to wait for.
TEST_P(Conformance, AnOpenVisitHoldsOffTheEndOfDestruction) {
  auto pool = make(1);
  const PoolLifetime life = pool->lifetime();
  std::atomic<bool> destroyed{false};
  std::thread destroyer;
  {
    PoolVisit visit(life);
    ASSERT_TRUE(visit) << "a live pool admits a visit";
    destroyer = std::thread([&pool, &destroyed] {
      pool.reset();
      destroyed.store(true, std::memory_order_release);
    });
    for (;;) {  // until the destructor has closed the pool to visits
      PoolVisit probe(life);
      if (!probe) break;
      std::this_thread::yield();
    }
    const auto grace = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    while (!life.expired() && std::chrono::steady_clock::now() < grace)
      std::this_thread::yield();
    EXPECT_FALSE(life.expired()) << "the pool was freed under an open visit";
    EXPECT_FALSE(destroyed.load(std::memory_order_acquire));
  }
  destroyer.join();
  EXPECT_TRUE(life.expired());
  EXPECT_FALSE(PoolVisit(life)) << "a gone pool admits no visit";
  // A pool made now may reuse the record: it admits its own visits, never the old handle's.
  auto next = make(1);
  EXPECT_TRUE(PoolVisit(next->lifetime()));
  EXPECT_FALSE(PoolVisit(life));
}

// A task that a thread runs inside its own visit (a future's waiter helping with try_run_one())
// destroys the pool: the destructor does not wait for the visit it runs inside, and that visit ends
// without touching the record again, so pools made afterwards (which may reuse it) are destroyed
// without waiting for a visit that is already over.
TEST_P(Conformance, DestroyedFromATaskRunInsideAVisit) {
  ::testing::internal::CaptureStderr();
  IThreadPool* pool = make(1).release();
  const PoolLifetime life = pool->lifetime();
  Flag worker_held, release_worker;
  pool->submit([&] {
    worker_held.raise();
    release_worker.wait();
  });
  worker_held.wait();
  bool deleted = false;
  pool->submit([pool, &deleted, &release_worker] {
    release_worker.raise();
    delete pool;
    deleted = true;
  });
  {
    PoolVisit visit(life);
    ASSERT_TRUE(visit);
    EXPECT_TRUE(pool->try_run_one());  // runs the deleting task here, inside the visit
  }
  EXPECT_TRUE(deleted);
  EXPECT_TRUE(life.expired());
  (void)::testing::internal::GetCapturedStderr();
  for (int i = 0; i < 3; ++i) {
    auto next = make(1);
    PoolVisit visit(next->lifetime());
    EXPECT_TRUE(visit);
  }
}

void destroy_from_own_task(const std::string& name, std::size_t threads) {
  std::atomic<std::size_t> ran{0};
  Flag destroyed, all_submitted;
  ::testing::internal::CaptureStderr();
  IThreadPool* pool = make_pool(name, threads).release();
  const PoolLifetime life = pool->lifetime();
  std::atomic<bool> expired_after_delete{false};
  constexpr std::size_t kBefore = 200, kAfter = 200;
  for (std::size_t i = 0; i < kBefore; ++i)
    pool->submit([&ran] { ran.fetch_add(1); });
  pool->submit([pool, life, &destroyed, &all_submitted, &expired_after_delete] {
    all_submitted.wait();  // the test thread must be done with `pool` before it dies
    delete pool;  // the pool drains the other tasks, joins its other workers, detaches this one
    expired_after_delete = life.expired();
    destroyed.raise();
  });
  for (std::size_t i = 0; i < kAfter; ++i)
    pool->submit([&ran] { ran.fetch_add(1); });
  all_submitted.raise();
  destroyed.wait();
  const std::string diagnostic = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(ran.load(), kBefore + kAfter) << "no task may be lost";
  EXPECT_TRUE(expired_after_delete.load());
  EXPECT_NE(diagnostic.find("destroyed from inside one of its own tasks"), std::string::npos)
      << "stderr was: " << diagnostic;
}

TEST_P(Conformance, DestroyedFromItsOwnTaskWithOneThread) {
  destroy_from_own_task(GetParam(), 1);
}
TEST_P(Conformance, DestroyedFromItsOwnTaskWithTwoThreads) {
  destroy_from_own_task(GetParam(), 2);
}

TEST_P(Conformance, RejectsZeroAndAbsurdThreadCounts) {
  const PoolEntry* entry = find_pool(GetParam());
  ASSERT_NE(entry, nullptr);
  EXPECT_THROW(entry->make(0), std::invalid_argument);
  try {
    entry->make(static_cast<std::size_t>(-1));
    FAIL() << "a negative count converted to size_t must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("negative"), std::string::npos) << e.what();
  }
  EXPECT_THROW(entry->make(kMaxThreads + 1), std::invalid_argument);
}

TEST_P(Conformance, StressTenMillionTasks) {
  // 10,000 external items x 1,000 recursive children = 10,010,000 tasks in Release.
  const std::size_t external = scaled(10'000, 200), children = 1'000;
  auto pool = make(0);
  std::vector<std::atomic<std::uint32_t>> children_seen(external);
  std::atomic<std::size_t> parents{0};
  for (std::size_t e = 0; e < external; ++e) {
    pool->submit([&, e] {
      parents.fetch_add(1, std::memory_order_relaxed);
      for (std::size_t c = 0; c < children; ++c) {
        pool->submit(
            [&children_seen, e] { children_seen[e].fetch_add(1, std::memory_order_relaxed); });
      }
    });
  }
  pool->wait_idle();
  EXPECT_EQ(parents.load(), external);
  std::size_t wrong = 0;
  for (const auto& c : children_seen)
    wrong += c.load() != children;
  EXPECT_EQ(wrong, 0u) << "external items whose children did not all run exactly once";
  EXPECT_EQ(pool->stats().tasks_executed(), external * (1 + children));
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

TEST_P(Conformance, IdlePoolUsesAlmostNoCpu) {
  constexpr std::size_t kThreads = 4;
  auto pool = make(kThreads);
  run_grid(*pool, 100, 100);  // warm up
  // Then every worker runs one task at once, and the window opens once each has parked since:
  // the search a worker makes before it parks is not idleness. The park counts are read while
  // every worker is inside its task, since a worker asleep at the reading would never raise its
  // own.
  std::atomic<std::size_t> arrived{0};
  std::atomic<bool> leave{false};
  for (std::size_t i = 0; i < kThreads; ++i) {
    pool->submit([&] {
      arrived.fetch_add(1);
      (void)test::eventually([&] { return leave.load(); });
    });
  }
  const bool all_busy = test::eventually([&] { return arrived.load() == kThreads; });
  const PoolStats busy = pool->stats();
  leave = true;
  pool->wait_idle();
  ASSERT_TRUE(all_busy) << "the " << kThreads << " workers never ran a task each at once";
  ASSERT_EQ(busy.workers.size(), kThreads);
  ASSERT_TRUE(test::eventually([&] {
    const PoolStats now = pool->stats();
    for (std::size_t w = 0; w < kThreads; ++w) {
      if (now.workers[w].parks == busy.workers[w].parks) return false;
    }
    return true;
  })) << "a worker of the idle pool never went to sleep";
  // This sleep is the measurement window, not a race fix: idle workers must use (almost) no CPU
  // while nothing happens. Generous bound: 10% of one core.
  const double cpu_before = process_cpu_seconds();
  const auto wall_before = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double cpu = process_cpu_seconds() - cpu_before;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_before).count();
  EXPECT_LT(cpu, 0.10 * wall) << "an idle pool of 4 workers burned " << cpu << " s CPU in " << wall
                              << " s";
}

// GoogleTest names allow letters, digits and '_': "stage4_chase_lev:fifo" ->
// "stage4_chase_lev__fifo" (tests/CMakeLists.txt filters on the same spelling).
std::string pool_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (std::size_t at = name.find(':'); at != std::string::npos; at = name.find(':', at))
    name.replace(at, 1, "__");
  return name;
}

INSTANTIATE_TEST_SUITE_P(Pools, Conformance, ::testing::ValuesIn([] {
                           std::vector<std::string> names;
                           for (auto n : pool_names())
                             names.emplace_back(n);
                           return names;
                         }()),
                         pool_test_name);

INSTANTIATE_TEST_SUITE_P(Variants, Conformance, ::testing::ValuesIn([] {
                           std::vector<std::string> names;
                           for (auto n : variant_names())
                             names.emplace_back(n);
                           return names;
                         }()),
                         pool_test_name);

// --- the registry itself ---------------------------------------------------------------------

TEST(Registry, NamesAreUniqueAndMatchTheCtestEntries) {
  std::set<std::string_view> unique;
  std::string joined;
  for (auto n : pool_names()) {
    EXPECT_TRUE(unique.insert(n).second) << "duplicate pool name " << n;
    if (!joined.empty()) joined += ',';
    joined += n;
  }
  // WSLAB_CTEST_POOLS is CMake's WSLAB_POOL_NAMES: a registered pool without a ctest entry would
  // silently skip the suite.
  EXPECT_EQ(joined, WSLAB_CTEST_POOLS)
      << "keep set(WSLAB_POOL_NAMES ...) in CMakeLists.txt equal to registry/pools.cpp";
}

TEST(Registry, VariantNamesAreUniqueWellFormedAndMatchTheCtestEntries) {
  const std::vector<std::string_view> stages = pool_names();
  std::set<std::string_view> unique(stages.begin(), stages.end());
  std::string joined;
  for (auto n : variant_names()) {
    EXPECT_TRUE(unique.insert(n).second) << "name used twice: " << n;
    const auto colon = n.find(':');
    EXPECT_TRUE(colon != std::string_view::npos && colon > 0 && colon + 1 < n.size() &&
                n.find(':', colon + 1) == std::string_view::npos)
        << "a variant is named <folder>:<what differs>, got " << n;
    if (!joined.empty()) joined += ',';
    joined += n;
  }
  EXPECT_EQ(joined, WSLAB_CTEST_VARIANTS)
      << "keep set(WSLAB_VARIANT_NAMES ...) in CMakeLists.txt equal to lab_variants()";
}

TEST(Registry, UnknownNameIsRejectedWithTheKnownNames) {
  try {
    make_pool("no_such_pool", 2);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no_such_pool"), std::string::npos) << what;
    for (auto n : pool_names())
      EXPECT_NE(what.find(n), std::string::npos) << what;
    for (auto n : variant_names())
      EXPECT_NE(what.find(n), std::string::npos) << what;
  }
}

TEST(Registry, ZeroThreadsMeansHardwareConcurrency) {
  const std::size_t hw = std::max(1u, std::thread::hardware_concurrency());
  for (auto n : pool_names())
    EXPECT_EQ(make_pool(n, 0)->thread_count(), hw) << n;
}

TEST(Registry, PoolsOfDifferentStagesDoNotConfuseEachOthersWorkers) {
  // A worker of one pool submitting to another is an external submitter there.
  auto names = pool_names();
  auto a = make_pool(names.front(), 2);
  auto b = make_pool(names.back(), 2);
  std::atomic<int> ran{0};
  a->submit([&] {
    EXPECT_TRUE(a->owns_current_thread());
    EXPECT_FALSE(b->owns_current_thread());
    b->submit([&] { ran.fetch_add(1); });
  });
  a->wait_idle();
  b->wait_idle();
  EXPECT_EQ(ran.load(), 1);
}

}  // namespace
}  // namespace wslab
