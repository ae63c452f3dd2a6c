// Coroutines on the pool (coro/): co_await a future, first_ready, schedule(), CoTask with
// co_join, sync_wait / ThreadPool::run, and the frame cache.
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "stage5_parallel_algos/coro/frame_cache.hpp"
#include "stage5_parallel_algos/tests/allocation_counter.hpp"
#include "stage5_parallel_algos/tests/join_counter_check.hpp"
#include "stage5_parallel_algos/tests/seat_guest.hpp"
#include "stage5_parallel_algos/threadpool.hpp"
#include "tests/until_refused.hpp"

namespace wslab {
namespace {

CoTask<std::uint64_t> co_fib(int n) {
  if (n < 2) co_return static_cast<std::uint64_t>(n);
  auto [a, b] = co_await co_join(co_fib(n - 1), co_fib(n - 2));
  co_return a + b;
}

std::uint64_t plain_fib(int n) {
  return n < 2 ? n : plain_fib(n - 1) + plain_fib(n - 2);
}

TEST(CoTask, FibByCoJoinOnOneTwoAndFourWorkers) {
  for (std::size_t threads : {1u, 2u, 4u}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.run(co_fib(20)), plain_fib(20)) << threads << " workers";
  }
}

// Each leaf of a binary tree of CoTasks exactly once, on a pool where children are stolen.
CoTask<void> leaves(std::vector<std::atomic<int>>& seen, std::size_t lo, std::size_t hi) {
  if (hi - lo == 1) {
    seen[lo].fetch_add(1, std::memory_order_relaxed);
    co_return;
  }
  const std::size_t mid = lo + (hi - lo) / 2;
  co_await co_join(leaves(seen, lo, mid), leaves(seen, mid, hi));
}

TEST(CoTask, EveryLeafOfAForkedTreeRunsExactlyOnce) {
  constexpr std::size_t kLeaves = 1 << 14;
  for (std::size_t threads : {2u, 4u}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 10; ++round) {
      std::vector<std::atomic<int>> seen(kLeaves);
      pool.run(leaves(seen, 0, kLeaves));
      for (std::size_t i = 0; i < kLeaves; ++i)
        ASSERT_EQ(seen[i].load(), 1) << "leaf " << i << ", round " << round;
    }
  }
}

// A queued child counts as a task of the pool until it has finished. Here the second child is
// always stolen (the first waits until it has started elsewhere), so the task that started the
// tree returns while the stolen child still runs, and the worker that ran it goes idle:
// wait_idle() (the scheduler's IThreadPool call, which ThreadPool::wait_all() wraps), called
// meanwhile from another thread, must still wait for the stolen child.
CoTask<void> until_started(const std::atomic<bool>& started) {
  while (!started.load(std::memory_order_acquire))
    std::this_thread::yield();
  co_return;
}
CoTask<void> long_child(std::atomic<bool>& started, std::atomic<bool>& finished) {
  started.store(true, std::memory_order_release);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
  while (std::chrono::steady_clock::now() < until) {
  }
  finished.store(true, std::memory_order_release);
  co_return;
}
CoTask<void> one_stolen_child(std::atomic<bool>& started, std::atomic<bool>& finished) {
  co_await co_join(until_started(started), long_child(started, finished));
}

TEST(CoJoin, WaitIdleWaitsForAChildThatAThiefRuns) {
  ThreadPool pool(2);
  for (int round = 0; round < 5; ++round) {
    std::atomic<bool> started{false}, finished{false};
    std::thread runner([&] { pool.run(one_stolen_child(started, finished)); });
    while (!started.load(std::memory_order_acquire))
      std::this_thread::yield();
    pool.scheduler().wait_idle();
    const bool finished_before_idle = finished.load(std::memory_order_acquire);
    runner.join();
    ASSERT_TRUE(finished_before_idle) << "round " << round;
  }
}

// co_join calls its children on the forking thread's stack; a recursion deeper than a worker's
// stack holds finds the stack three quarters full and queues its children as tasks instead.
CoTask<std::size_t> one() {
  co_return 1;
}
CoTask<std::size_t> chain(std::size_t depth) {
  if (depth == 0) co_return 0;
  auto [below, here] = co_await co_join(chain(depth - 1), one());
  co_return below + here;
}

TEST(CoJoin, ARecursionDeeperThanTheStackQueuesItsChildrenInstead) {
  constexpr std::size_t kDepth = 20000;  // some MiB of stack, in every build
  PoolOptions small_stacks;
  small_stacks.stack_size = 512 * 1024;
  for (std::size_t threads : {1u, 2u}) {
    ThreadPool pool(threads, small_stacks);
    EXPECT_EQ(pool.run(chain(kDepth)), kDepth) << threads << " workers";
  }
}

// A vector join queues its children a window at a time and reuses the window's jobs: with thieves
// taking some of them, each of 5,000 children (several windows) runs exactly once, and the results
// come back in order.
CoTask<std::size_t> counted_child(std::vector<std::atomic<int>>& seen, std::size_t i) {
  seen[i].fetch_add(1, std::memory_order_relaxed);
  co_return i;
}
CoTask<bool> many_children(std::vector<std::atomic<int>>& seen) {
  std::vector<CoTask<std::size_t>> children;
  for (std::size_t i = 0; i < seen.size(); ++i)
    children.push_back(counted_child(seen, i));
  const std::vector<std::size_t> results = co_await co_join(std::move(children));
  for (std::size_t i = 0; i < results.size(); ++i)
    if (results[i] != i) co_return false;
  co_return results.size() == seen.size();
}

TEST(CoJoin, AVectorOfMoreChildrenThanAWindowRunsEachOnceInOrder) {
  for (std::size_t threads : {1u, 2u, 4u}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 20; ++round) {
      std::vector<std::atomic<int>> seen(5000);
      ASSERT_TRUE(pool.run(many_children(seen))) << threads << " workers, round " << round;
      for (std::size_t i = 0; i < seen.size(); ++i)
        ASSERT_EQ(seen[i].load(), 1) << "child " << i << ", " << threads << " workers";
    }
  }
}

TEST(CoTask, CoJoinOfAVectorReturnsTheResultsInOrder) {
  ThreadPool pool(2);
  auto square = [](int i) -> CoTask<int> { co_return i* i; };
  auto all = [&]() -> CoTask<std::vector<int>> {
    std::vector<CoTask<int>> tasks;
    for (int i = 0; i < 100; ++i)
      tasks.push_back(square(i));
    co_return co_await co_join(std::move(tasks));
  };
  const std::vector<int> squares = pool.run(all());
  ASSERT_EQ(squares.size(), 100u);
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(squares[i], i * i);
  auto none = []() -> CoTask<std::size_t> {
    co_return (co_await co_join(std::vector<CoTask<int>>{})).size();
  };
  EXPECT_EQ(pool.run(none()), 0u);
}

TEST(CoTask, EveryChildRunsAndTheFirstFailedOnesExceptionWins) {
  ThreadPool pool(2);
  std::atomic<int> ran{0};
  auto child = [&](int i, bool fail) -> CoTask<int> {
    ran.fetch_add(1);
    if (fail) throw std::runtime_error("child " + std::to_string(i));
    co_return i;
  };
  auto parent = [&]() -> CoTask<void> {
    std::vector<CoTask<int>> tasks;
    for (int i = 0; i < 8; ++i)
      tasks.push_back(child(i, i == 3 || i == 6));
    co_await co_join(std::move(tasks));
  };
  try {
    pool.run(parent());
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "child 3");
  }
  EXPECT_EQ(ran.load(), 8);

  auto pair_parent = [&]() -> CoTask<void> { co_await co_join(child(1, false), child(2, true)); };
  EXPECT_THROW(pool.run(pair_parent()), std::runtime_error);
}

TEST(CoTask, AwaitingRunsTheTaskAndAnEmptyOrStartedTaskIsRefused) {
  ThreadPool pool(1);
  auto seven = []() -> CoTask<int> { co_return 7; };
  auto twice = [&]() -> CoTask<int> {
    CoTask<int> t = seven();
    const int first = co_await std::move(t);
    co_await std::move(t);  // started already: refused
    co_return first;
  };
  EXPECT_THROW(pool.run(twice()), std::logic_error);
  auto empty = []() -> CoTask<int> {
    CoTask<int> t;
    co_return co_await std::move(t);
  };
  EXPECT_THROW(pool.run(empty()), std::logic_error);
  EXPECT_THROW(pool.run(CoTask<int>{}), std::logic_error);
  auto move_only = []() -> CoTask<std::unique_ptr<int>> { co_return std::make_unique<int>(5); };
  EXPECT_EQ(*pool.run(move_only()), 5);
}

// A cancelled parent: a TaskGroup whose callables each run a coroutine tree is cancelled while
// they run. A callable skipped by the cancel starts no tree; one that started runs its tree to
// the end (a CoTask has no cancellation of its own), so each tree counts all its leaves or none.
TEST(CoTask, ACancelledGroupsCallablesRunTheirCoroutineTreesWholeOrNotAtAll) {
  constexpr std::size_t kTrees = 64, kLeaves = 256;
  ThreadPool pool(2);
  std::vector<std::vector<std::atomic<int>>> seen(kTrees);
  for (auto& tree : seen)
    tree = std::vector<std::atomic<int>>(kLeaves);
  std::atomic<std::size_t> started{0};
  TaskGroup group(pool);
  for (std::size_t t = 0; t < kTrees; ++t) {
    group.run([&, t] {
      if (started.fetch_add(1) == kTrees / 4) group.cancel();
      sync_wait(pool.scheduler(), leaves(seen[t], 0, kLeaves));
    });
  }
  group.wait();
  std::size_t whole = 0;
  for (auto& tree : seen) {
    int sum = 0;
    for (auto& leaf : tree) {
      ASSERT_LE(leaf.load(), 1);
      sum += leaf.load();
    }
    ASSERT_TRUE(sum == 0 || sum == static_cast<int>(kLeaves)) << sum << " leaves of a tree ran";
    whole += sum != 0;
  }
  EXPECT_EQ(whole, started.load());
  EXPECT_LT(whole, kTrees);  // the cancel skipped some
}

// co_join of an empty or already started CoTask throws std::logic_error before any child starts:
// the other child of the pair, and every task of the vector, never runs.
TEST(CoTask, CoJoinOfAnEmptyOrStartedTaskIsRefusedBeforeAnyChildStarts) {
  ThreadPool pool(2);
  std::atomic<int> ran{0};
  auto counted = [&]() -> CoTask<int> {
    ran.fetch_add(1);
    co_return 1;
  };
  auto pair_with_empty = [&]() -> CoTask<void> {
    (void)co_await co_join(counted(), CoTask<int>{});
  };
  EXPECT_THROW(pool.run(pair_with_empty()), std::logic_error);
  auto pair_with_started = [&]() -> CoTask<void> {
    CoTask<int> t = counted();
    (void)co_await std::move(t);  // runs it once: ran == 1
    (void)co_await co_join(counted(), std::move(t));
  };
  EXPECT_THROW(pool.run(pair_with_started()), std::logic_error);
  auto vector_with_empty = [&]() -> CoTask<void> {
    std::vector<CoTask<int>> tasks;
    tasks.push_back(counted());
    tasks.emplace_back();
    tasks.push_back(counted());
    (void)co_await co_join(std::move(tasks));
  };
  EXPECT_THROW(pool.run(vector_with_empty()), std::logic_error);
  EXPECT_EQ(ran.load(), 1);  // only the task awaited on its own
}

TEST(CoTask, CoJoinOutsideEveryPoolTaskNeedsThePoolNamed) {
  EXPECT_THROW(static_cast<void>(co_join(co_fib(3), co_fib(2))), std::logic_error);
}

// A worker that sync_waits helps its pool: on one worker the awaited task still runs.
TEST(SyncWait, FromInsideATaskOnAOneWorkerPoolHelpsInsteadOfDeadlocking) {
  ThreadPool pool(1);
  auto answer = pool.async([&] { return sync_wait(pool.scheduler(), co_fib(15)); });
  EXPECT_EQ(answer.get(), plain_fib(15));
}

// sync_wait nested inside coroutines, deeper than the help depth's bound (kMaxHelpDepth): each
// level's driver is the waiting worker's own work, which it runs whatever its depth.
CoTask<int> nested_runs(ThreadPool& pool, int depth) {
  if (depth == 0) co_return 0;
  co_return 1 + pool.run(nested_runs(pool, depth - 1));
}

TEST(SyncWait, NestedPastTheHelpDepthBoundOnOneWorkerFinishes) {
  static_assert(kMaxHelpDepth < 100);
  ThreadPool pool(1);
  EXPECT_EQ(pool.run(nested_runs(pool, 100)), 100);
}

TEST(Schedule, MovesTheCoroutineOntoTheNamedPoolsWorker) {
  ThreadPool from(1), to(1);
  auto hop = [&]() -> CoTask<std::pair<bool, bool>> {
    co_await to.schedule();
    co_return std::pair{to.scheduler().owns_current_thread(),
                        from.scheduler().owns_current_thread()};
  };
  const auto [on_to, on_from] = from.run(hop());
  EXPECT_TRUE(on_to);
  EXPECT_FALSE(on_from);
}

TEST(AwaitFuture, ReturnsTheValueRethrowsTheErrorAndEmptiesAnLvalueFuture) {
  ThreadPool pool(2);
  auto body = [&]() -> CoTask<int> {
    Future<int> f = pool.async([] { return 40; });
    const int v = co_await f;
    EXPECT_FALSE(f.valid());
    const int w = co_await pool.async([] { return 2; });
    co_await pool.async([] {});  // Future<void>
    co_return v + w;
  };
  EXPECT_EQ(pool.run(body()), 42);
  auto failing = [&]() -> CoTask<int> {
    co_return co_await pool.async([]() -> int { throw std::runtime_error("job"); });
  };
  EXPECT_THROW(pool.run(failing()), std::runtime_error);
  auto empty = [&]() -> CoTask<int> {
    Future<int> f;
    co_return co_await f;
  };
  EXPECT_THROW(pool.run(empty()), std::logic_error);
}

// The future completes on another thread while the coroutine suspends: whichever side wins,
// the coroutine resumes exactly once (a second resume of a suspended-at-final or running
// coroutine would crash or count twice).
TEST(AwaitFuture, AFutureCompletingWhileTheCoroutineSuspendsResumesItExactlyOnce) {
  ThreadPool pool(4);
  constexpr int kAwaits = 2000;
  std::atomic<int> resumed{0};
  auto one = [&](int i) -> CoTask<int> {
    const int v = co_await pool.async([i] { return i; });
    resumed.fetch_add(1);
    co_return v;
  };
  auto all = [&]() -> CoTask<long> {
    std::vector<CoTask<int>> tasks;
    for (int i = 0; i < kAwaits; ++i)
      tasks.push_back(one(i));
    long sum = 0;
    for (int v : co_await co_join(std::move(tasks)))
      sum += v;
    co_return sum;
  };
  EXPECT_EQ(pool.run(all()), static_cast<long>(kAwaits) * (kAwaits - 1) / 2);
  EXPECT_EQ(resumed.load(), kAwaits);
}

// The future of `value`, from a job of `pool` that spins until `release` is set: an input that is
// not ready until the test says so.
Future<int> released_by(ThreadPool& pool, const std::atomic<bool>& release, int value) {
  return pool.async([&release, value] {
    while (!release.load())
      std::this_thread::yield();
    return value;
  });
}

// Runs body() on `home`'s one worker from another thread, and releases `release` only once that
// worker sleeps after body() said it is about to await: by then the coroutine has suspended, so
// what it awaits was not ready at the co_await.
template <class T, class Body>
T run_released_after_the_suspension(ThreadPool& home, std::atomic<bool>& about_to_await,
                                    std::atomic<bool>& release, Body body) {
  std::optional<T> result;
  std::thread caller([&] { result.emplace(home.run(body())); });
  while (!about_to_await.load())
    std::this_thread::yield();
  test::wait_until_a_worker_sleeps(static_cast<Scheduler&>(home.scheduler()));
  release.store(true);
  caller.join();
  return std::move(*result);
}

TEST(AwaitFuture, ResumesOnTheFuturesPoolNotTheOneItStartedOn) {
  ThreadPool home(1), other(1);
  std::atomic<bool> about_to_await{false}, release{false};
  auto body = [&]() -> CoTask<bool> {
    Future<void> f = other.async([&] {
      while (!release.load())
        std::this_thread::yield();
    });
    about_to_await.store(true);
    co_await f;
    co_return other.scheduler().owns_current_thread();
  };
  EXPECT_TRUE(run_released_after_the_suspension<bool>(home, about_to_await, release, body));
}

// Ready already, the future suspends nothing: the coroutine goes on where it runs.
TEST(AwaitFuture, AFutureReadyAlreadyContinuesOnTheCoroutinesThread) {
  ThreadPool home(1), other(1);
  Future<int> f = other.async([] { return 4; });
  f.wait();
  auto body = [&]() -> CoTask<std::pair<int, bool>> {
    const std::thread::id before = std::this_thread::get_id();
    const int v = co_await f;
    co_return std::pair{v, std::this_thread::get_id() == before};
  };
  const auto [v, same_thread] = home.run(body());
  EXPECT_EQ(v, 4);
  EXPECT_TRUE(same_thread);
}

// The future's pool is destroyed while a coroutine is suspended on it: the destructor drains the
// job, and the coroutine resumes (on that pool's draining worker or on the destroying thread).
TEST(AwaitFuture, APoolDestroyedWhileACoroutineAwaitsItsFutureStillResumesIt) {
  ThreadPool home(1);
  auto doomed = std::make_unique<ThreadPool>(1);
  std::atomic<bool> release{false};
  Future<int> f = released_by(*doomed, release, 9);
  std::atomic<bool> suspended{false};
  auto body = [&]() -> CoTask<int> {
    suspended.store(true);
    co_return co_await f;
  };
  Future<int> result = home.async([&] { return sync_wait(home.scheduler(), body()); });
  while (!suspended.load())
    std::this_thread::yield();
  std::thread destroyer([&] { doomed.reset(); });
  release.store(true);
  destroyer.join();
  EXPECT_EQ(result.get(), 9);
}

TEST(FirstReady, ReturnsTheLowestReadyIndexWithoutConsumingAnything) {
  ThreadPool pool(2);
  std::atomic<bool> release{false};
  auto body = [&]() -> CoTask<std::size_t> {
    std::vector<Future<int>> fs;
    fs.push_back(released_by(pool, release, 0));
    fs.push_back(pool.async([] { return 1; }));
    const std::size_t i = co_await first_ready(fs);
    EXPECT_TRUE(fs[i].valid());
    const int v = fs[i].get();
    release.store(true);
    EXPECT_EQ(co_await fs[0], 0);
    co_return static_cast<std::size_t>(v);
  };
  EXPECT_EQ(pool.run(body()), 1u);
  auto none = [&]() -> CoTask<std::size_t> {
    co_return co_await first_ready(std::vector<Future<int>>{});
  };
  EXPECT_THROW(pool.run(none()), std::invalid_argument);
}

// Suspended, first_ready resumes on the first input's pool, whichever input completes; with an
// input ready already, it goes on where the coroutine runs.
TEST(FirstReady, ResumesOnTheFirstInputsPoolOrGoesOnWhenOneIsReady) {
  ThreadPool home(1), first(2), second(1);  // first's other worker is free to resume it
  std::atomic<bool> about_to_await{false}, release{false}, resumed{false};
  auto body = [&]() -> CoTask<std::pair<std::size_t, bool>> {
    Future<int> last = released_by(first, resumed, 0);
    Future<int> fast = released_by(second, release, 1);
    about_to_await.store(true);
    const std::size_t i = co_await first_ready(last, fast);
    const bool on_first = first.scheduler().owns_current_thread();
    resumed.store(true);
    last.wait();
    co_return std::pair{i, on_first};
  };
  const auto [i, on_first] = run_released_after_the_suspension<std::pair<std::size_t, bool>>(
      home, about_to_await, release, body);
  EXPECT_EQ(i, 1u);
  EXPECT_TRUE(on_first);

  Future<int> ready = second.async([] { return 2; });
  ready.wait();
  auto at_once = [&]() -> CoTask<bool> {
    const std::thread::id before = std::this_thread::get_id();
    (void)co_await first_ready(ready);
    co_return std::this_thread::get_id() == before;
  };
  EXPECT_TRUE(home.run(at_once()));
}

// first_ready resumes on its first input's pool; here that pool is being destroyed when another
// pool's worker completes the other input. That worker reaches the doomed pool inside a visit
// (PoolVisit), the pool, draining, refuses its submission, and the coroutine resumes on the
// completing worker: not dropped, and (the sanitizer builds check it) not queued on a pool about
// to be freed.
TEST(FirstReady, ResumesOnTheCompletingThreadWhileTheFirstInputsPoolIsDestroyed) {
  ThreadPool home(1), other(1);
  auto doomed = std::make_unique<ThreadPool>(1);
  ThreadPool* const d = doomed.get();
  std::atomic<bool> about_to_await{false}, release_fast{false}, release_slow{false};
  Future<int> slow = released_by(*d, release_slow, 0);  // holds the destructor in its drain
  Future<int> fast = released_by(other, release_fast, 1);
  auto body = [&]() -> CoTask<std::pair<std::size_t, bool>> {
    about_to_await.store(true);
    const std::size_t i = co_await first_ready(slow, fast);
    co_return std::pair{i, other.scheduler().owns_current_thread()};
  };
  std::optional<std::pair<std::size_t, bool>> result;
  std::thread caller([&] { result.emplace(home.run(body())); });
  while (!about_to_await.load())
    std::this_thread::yield();
  test::wait_until_a_worker_sleeps(static_cast<Scheduler&>(home.scheduler()));  // suspended
  std::thread destroyer([&doomed] { doomed.reset(); });
  test::submit_until_refused([d] { d->spawn([] {}); });  // the destructor has begun
  release_fast.store(true);
  caller.join();
  release_slow.store(true);
  destroyer.join();
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->first, 1u);
  EXPECT_TRUE(result->second) << "resumed elsewhere than on the worker that completed the input";
  EXPECT_EQ(slow.get(), 0);
}

// Steady state: once the thread's frame cache holds a recursion's frames, forking allocates
// nothing (one worker, so every frame is freed on the thread that allocated it).
TEST(CoTask, SteadyStateForksAllocateNothing) {
  ThreadPool pool(1);
  std::uint64_t result = 0;
  const auto fib_on_the_worker = [&] { result = sync_wait(pool.scheduler(), co_fib(16)); };
  EXPECT_GT(test::allocations_on_a_worker(pool.scheduler(), fib_on_the_worker), 0u);  // warms
  result = 0;
  EXPECT_EQ(test::allocations_on_a_worker(pool.scheduler(), fib_on_the_worker), 0u);
  EXPECT_EQ(result, plain_fib(16));
}

// The counter's acq_rel publishes each child's result to the one that resumes the parent; under
// ThreadSanitizer this run is the check (its relaxed twin is weakened_join_counter_test.cpp).
TEST(JoinCounter, TheLastChildToArriveResumesTheParentAndSeesBothResults) {
  EXPECT_EQ(test::children_arrive_and_the_last_reads_both<detail::JoinCounter>(200), 200);
}

TEST(FrameCache, ReusesAFreedFrameOfTheSameClassAndBoundsWhatItKeeps) {
  detail::FrameCache cache;
  void* a = cache.allocate(100);
  cache.deallocate(a, 100);
  EXPECT_EQ(cache.allocate(128), a);  // 100 and 128 bytes share the class of 128
  cache.deallocate(a, 128);
  std::vector<void*> many;
  for (std::uint32_t i = 0; i < detail::FrameCache::kKeep + 10; ++i)
    many.push_back(cache.allocate(64));
  const std::size_t before = test::allocations_on_this_thread();
  for (void* p : many)
    cache.deallocate(p, 64);
  for (std::uint32_t i = 0; i < detail::FrameCache::kKeep; ++i)
    many[i] = cache.allocate(64);
  EXPECT_EQ(test::allocations_on_this_thread(), before);  // kKeep came back from the cache
  for (std::uint32_t i = 0; i < detail::FrameCache::kKeep; ++i)
    cache.deallocate(many[i], 64);
  cache.close();
}

// A thread's own cache (in its fork-join record) names itself in the thread-specific key whose
// destructor returns its frames to the heap when the thread ends; a second cache opened and closed
// on the same thread (this test's kind) leaves that registration alone. LeakSanitizer, in the ASan
// build, checks that the frames do go back.
TEST(FrameCache, TheThreadsOwnCacheStaysRegisteredForTheThreadsEnd) {
  std::thread([] {
    detail::FrameCache& own = detail::this_fork_join_thread.frames;
    own.deallocate(own.allocate(64), 64);
    const std::optional<pthread_key_t>& key = detail::frame_cache_closer();
    ASSERT_TRUE(key.has_value());
    EXPECT_EQ(pthread_getspecific(*key), &own);
    detail::FrameCache other;
    other.deallocate(other.allocate(64), 64);
    other.close();
    EXPECT_EQ(pthread_getspecific(*key), &own);
    own.close();  // as the key's destructor would
    EXPECT_EQ(pthread_getspecific(*key), nullptr);
  }).join();
}

#if WSLAB_ASAN
// The cache keeps freed frames poisoned: a coroutine frame touched after its coroutine was
// destroyed is reported, as it would be if the frame had gone back to the heap.
TEST(FrameCacheDeathTest, AFrameTouchedAfterItWasFreedIntoTheCacheIsReported) {
  EXPECT_DEATH(
      {
        detail::FrameCache cache;
        auto* frame = static_cast<volatile char*>(cache.allocate(64));
        cache.deallocate(const_cast<char*>(frame), 64);
        frame[8] = 1;
      },
      "use-after-poison");
}
#endif

}  // namespace
}  // namespace wslab
