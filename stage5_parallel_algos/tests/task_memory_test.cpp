// Where a task's memory comes from on the production scheduler: a TaskGroup's callables live in
// the workers' task nodes like spawned tasks (no allocation per run()), a backlog larger than a
// worker's cache reuses its nodes through the pool's depot, an empty depot answers without its
// lock, and an idle pool frees the depot.
// Also the TaskGroup waiter's rule past the help bounds: what lies above its group's mark runs as
// its own work, an older task below the mark is left where it is, never nested.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "stage5_parallel_algos/fork_join/help_bounds.hpp"
#include "stage5_parallel_algos/fork_join/task_group.hpp"
#include "stage5_parallel_algos/scheduler/node_depot.hpp"
#include "stage5_parallel_algos/scheduler/task_node_cache.hpp"
#include "stage5_parallel_algos/tests/allocation_counter.hpp"
#include "tests/flag.hpp"
#include "tests/test_scale.hpp"

namespace {

using wslab::Scheduler;
using wslab::TaskGroup;

// More nodes than a worker's cache holds (SchedulerKnobs::task_node_cache), so that a burst
// spills into the depot.
constexpr std::size_t kBacklog = 50'000;

// Runs `n` counted callables in one group round on the calling worker and waits.
void group_round(Scheduler& pool, std::size_t n, std::atomic<std::size_t>& ran) {
  TaskGroup g(pool);
  for (std::size_t i = 0; i < n; ++i)
    g.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
  g.wait();
}

// Invariant: every callable runs exactly once, and on a one-worker pool a second backlog of the
// same size allocates nothing: the first one's nodes come back from the worker's cache and the
// depot, where a backlog larger than the cache must have put some. (With two workers only the
// count is checked: the second backlog may peak higher than the first, depending on when the
// thief starts, and then needs new nodes; and a thief that keeps pace with the spawner keeps so
// few nodes in flight that none need reach the depot.) Group jobs' memory, so without Step 'Group
// frames', whose frames would take these callables; with it, the frame deque the first backlog
// grew holds the second one (no depot then).
TEST(TaskMemory, ASecondBacklogOnAWorkerAllocatesNothing) {
  for (const bool frames : {false, true}) {
    ASSERT_LE(kBacklog, wslab::SchedulerKnobs{}.group_frames_capacity);
    for (std::size_t threads : {1u, 2u}) {
      Scheduler pool(threads, {}, wslab::SchedulerKnobs{.group_frames = frames});
      std::atomic<std::size_t> ran{0};
      std::size_t allocations = ~std::size_t{0};
      std::size_t depot_after = 0;
      pool.spawn([&] {
        group_round(pool, kBacklog, ran);  // warms the cache and fills the depot
        const std::size_t before = wslab::test::allocations_on_this_thread();
        group_round(pool, kBacklog, ran);
        allocations = wslab::test::allocations_on_this_thread() - before;
        depot_after = pool.depot_nodes();
      });
      pool.wait_idle();
      EXPECT_EQ(ran.load(), 2 * kBacklog) << threads << " threads";
      if (threads == 1) {
        EXPECT_EQ(allocations, 0u) << (frames ? "frames" : "group jobs");
        if (!frames) {
          EXPECT_GE(depot_after, wslab::sched::NodeDepot::kBatch);
        }
      }
    }
  }
}

// From a thread outside the workers, each run() lists a claimable job for the waiter (reference:
// "one small job per call, plus the growth of the group's list of them"). The list must grow
// geometrically: grown one slot at a time it would copy itself on every run(), one more allocation
// per callable and quadratic time. The only worker is held until every callable is listed, so
// nothing runs or leaves the list meanwhile.
TEST(TaskMemory, CallablesListedFromOutsideCostOneAllocationEach) {
  constexpr std::size_t kCallables = 20'000;
  Scheduler pool(1);
  wslab::test::Flag worker_free;
  pool.spawn([&worker_free] { worker_free.wait(); });
  std::atomic<std::size_t> ran{0};
  std::size_t allocations = 0;
  {
    TaskGroup g(pool);
    const std::size_t before = wslab::test::allocations_on_this_thread();
    for (std::size_t i = 0; i < kCallables; ++i)
      g.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
    allocations = wslab::test::allocations_on_this_thread() - before;
    worker_free.raise();
    g.wait();
  }
  pool.wait_idle();
  EXPECT_EQ(ran.load(), kCallables);
  // One job each, the injector's segments for the trampolines, and about log2(n) list growths.
  EXPECT_GE(allocations, kCallables);
  EXPECT_LE(allocations, kCallables + kCallables / 8);
}

// A worker's cache that runs dry while the depot is empty allocates its nodes without the depot's
// lock, which it would otherwise take once per node for nothing (a backlog past the caches, the
// first since the pool went idle and emptied the depot). Once batches have spilled there, a dry
// cache takes them back instead of allocating.
TEST(TaskMemory, ADryCacheLocksTheDepotOnlyWhenItHoldsNodes) {
  using wslab::sched::NodeDepot;
  NodeDepot depot;
  wslab::sched::TaskNodeCache cache(2 * NodeDepot::kBatch, &depot);
  std::vector<wslab::sched::TaskJob*> nodes;
  for (std::size_t i = 0; i < 4 * NodeDepot::kBatch; ++i)
    nodes.push_back(cache.take_empty());
  EXPECT_EQ(depot.locked_takes(), 0u);
  for (wslab::sched::TaskJob* node : nodes)
    cache.recycle(node);  // past the cache's limit: batches go to the depot
  ASSERT_EQ(depot.size(), 2 * NodeDepot::kBatch);
  nodes.clear();
  nodes.reserve(4 * NodeDepot::kBatch);
  const std::size_t before = wslab::test::allocations_on_this_thread();
  for (std::size_t i = 0; i < 4 * NodeDepot::kBatch; ++i)
    nodes.push_back(cache.take_empty());
  EXPECT_EQ(wslab::test::allocations_on_this_thread() - before, 0u);
  EXPECT_EQ(depot.locked_takes(), 2u);
  EXPECT_EQ(depot.size(), 0u);
  for (wslab::sched::TaskJob* node : nodes)
    cache.recycle(node);
}

// Once every worker has slept for a while, the depot is empty: an idle pool keeps only what
// its workers' caches hold. (Polled with a deadline: when the workers fall asleep is up to them.)
// One worker, so that the backlog is all in flight at once and must fill the depot: a second
// worker stealing as fast as the spawner pushes could keep it empty. Without group frames, which
// would hold the backlog instead.
TEST(TaskMemory, AnIdlePoolEmptiesTheDepot) {
  Scheduler pool(1, {}, wslab::SchedulerKnobs{.group_frames = false});  // group jobs, in blocks
  std::atomic<std::size_t> ran{0};
  std::size_t depot_busy = 0;
  pool.spawn([&] {
    group_round(pool, kBacklog, ran);
    depot_busy = pool.depot_nodes();
  });
  pool.wait_idle();
  ASSERT_EQ(ran.load(), kBacklog);
  ASSERT_GT(depot_busy, 0u);
  EXPECT_TRUE(wslab::test::eventually([&] { return pool.depot_nodes() == 0; }))
      << pool.depot_nodes() << " nodes still out of the depot";
}

// Past the help bounds a TaskGroup's waiter runs only its own work: what lies above its group's
// mark on its deque (README.md, step 'Waits without help bounds'). On a one-worker pool a plain
// task spawned before the group's callable lies below the mark: the waiter leaves it there instead
// of nesting it, runs its own callable, and the task still runs, once, after the wait (nobody else
// could run it before: the only worker is the waiter).
TEST(TaskMemory, PastTheHelpBoundsATaskBelowTheMarkIsLeftNotNested) {
  Scheduler pool(1);
  std::atomic<int> own{0};
  std::atomic<int> foreign{0};
  int foreign_when_wait_returned = -1;
  int own_when_wait_returned = -1;
  pool.spawn([&] {
    TaskGroup g(pool);
    const std::size_t saved = wslab::detail::this_fork_join_thread.help_depth;
    wslab::detail::this_fork_join_thread.help_depth =
        wslab::kMaxHelpDepth;  // as if nested 64 helps deep
    ASSERT_FALSE(wslab::help_allowed());
    pool.spawn([&] { foreign.fetch_add(1); });
    g.run([&] { own.fetch_add(1); });
    g.wait();
    foreign_when_wait_returned = foreign.load();
    own_when_wait_returned = own.load();
    wslab::detail::this_fork_join_thread.help_depth = saved;
  });
  pool.wait_idle();
  EXPECT_EQ(own_when_wait_returned, 1);
  EXPECT_EQ(foreign_when_wait_returned, 0);
  EXPECT_EQ(foreign.load(), 1);
  EXPECT_EQ(own.load(), 1);
}

// A task the waiter's own frame spawned after the group's callable lies above the mark: past the
// bounds too, the waiter runs it as its own work, not as one more (counted) help.
TEST(TaskMemory, PastTheHelpBoundsATaskAboveTheMarkIsTheWaitersOwn) {
  Scheduler pool(1);
  std::atomic<int> foreign{0};
  int foreign_when_wait_returned = -1;
  std::size_t depth_inside = 0;
  pool.spawn([&] {
    TaskGroup g(pool);
    const std::size_t saved = wslab::detail::this_fork_join_thread.help_depth;
    wslab::detail::this_fork_join_thread.help_depth = wslab::kMaxHelpDepth;
    g.run([] {});
    pool.spawn([&] {
      depth_inside = wslab::current_help_depth();
      foreign.fetch_add(1);
    });
    g.wait();
    foreign_when_wait_returned = foreign.load();
    wslab::detail::this_fork_join_thread.help_depth = saved;
  });
  pool.wait_idle();
  EXPECT_EQ(foreign_when_wait_returned, 1);
  EXPECT_EQ(depth_inside, wslab::kMaxHelpDepth) << "run as help, one frame deeper";
}

// Allocations of the second of two rounds of 1,000 run()s of a callable of `Bytes` bytes, by a
// group on a worker of a one-worker pool, in the worker's stack or on the heap: its callables are
// group jobs (README.md, step 'Group jobs'), or, with the step off, task nodes (the group's
// pointer riding along in the task's 56 inline bytes). The first round warms the node cache.
enum class GroupAt { stack, heap };
template <std::size_t Bytes>
std::size_t allocations_of_a_warm_round(GroupAt at, bool group_jobs = true) {
  Scheduler pool(1, {}, wslab::SchedulerKnobs{.group_jobs = group_jobs});
  std::atomic<std::size_t> ran{0};
  std::size_t allocations = ~std::size_t{0};
  struct Payload {
    char bytes[Bytes - 16];  // with a reference and a pointer
  };
  pool.spawn([&] {
    const Payload payload{};
    Scheduler* self = &pool;
    std::optional<TaskGroup> in_stack;
    std::unique_ptr<TaskGroup> on_heap;
    TaskGroup& g = at == GroupAt::stack ? in_stack.emplace(pool)
                                        : *(on_heap = std::make_unique<TaskGroup>(pool));
    auto round = [&] {
      for (int i = 0; i < 1000; ++i) {
        auto call = [&ran, payload, self] {
          ran.fetch_add(payload.bytes[0] + (self != nullptr ? 1 : 0), std::memory_order_relaxed);
        };
        static_assert(sizeof(call) == Bytes);
        g.run(call);
      }
      g.wait();
    };
    round();
    const std::size_t before = wslab::test::allocations_on_this_thread();
    round();
    allocations = wslab::test::allocations_on_this_thread() - before;
  });
  pool.wait_idle();
  EXPECT_EQ(ran.load(), 2000u);
  return allocations;
}

// run() keeps a callable of 48 bytes as spawn() does (reference: "what spawn does"), whichever
// way the group queues it.
TEST(TaskMemory, RunOfA48ByteCallableAllocatesNothing) {
  EXPECT_EQ(allocations_of_a_warm_round<48>(GroupAt::stack), 0u) << "as group jobs";
  EXPECT_EQ(allocations_of_a_warm_round<48>(GroupAt::heap), 0u) << "as group jobs, on the heap";
  EXPECT_EQ(allocations_of_a_warm_round<48>(GroupAt::stack, false), 0u) << "as task nodes";
}

// On its group's home worker, run() keeps a callable of 56 bytes, the most a spawned task keeps
// inline, in a group job: the job's header is two words and the group's pointer, and the home is
// the group's. The classic UTS benchmark's callable is this size. A group on the heap too (as
// oneTBB's task_group often is): its waiter may be on another thread, and the count allows that.
TEST(TaskMemory, RunOfA56ByteCallableOnItsHomeWorkerAllocatesNothing) {
  EXPECT_EQ(allocations_of_a_warm_round<56>(GroupAt::stack), 0u) << "in the stack";
  EXPECT_EQ(allocations_of_a_warm_round<56>(GroupAt::heap), 0u) << "on the heap";
}

// Allocations of exactly `size` bytes in a first round of 1,000 run()s of a callable of `Bytes`
// bytes by a group on the worker of a fresh one-worker pool: its caches are empty, so each group
// job's memory is new. Without group frames, which would take these callables.
template <std::size_t Bytes>
std::size_t cold_allocations_of(std::size_t size, bool small_group_jobs = true) {
  Scheduler pool(
      1, {}, wslab::SchedulerKnobs{.small_group_jobs = small_group_jobs, .group_frames = false});
  std::atomic<std::size_t> ran{0};
  std::size_t allocations = ~std::size_t{0};
  struct Payload {
    char bytes[Bytes - 8];  // with a reference
  };
  pool.spawn([&] {
    const Payload payload{};
    TaskGroup g(pool);
    const std::size_t before = wslab::test::allocations_of_size_on_this_thread(size);
    for (int i = 0; i < 1000; ++i) {
      auto call = [&ran, payload] {
        ran.fetch_add(static_cast<std::size_t>(payload.bytes[0]) + 1, std::memory_order_relaxed);
      };
      static_assert(sizeof(call) == Bytes);
      g.run(call);
    }
    allocations = wslab::test::allocations_of_size_on_this_thread(size) - before;
    g.wait();
  });
  pool.wait_idle();
  EXPECT_EQ(ran.load(), 1000u);
  return allocations;
}

// A group job of a callable of up to 32 bytes takes a 56-byte block, 64 bytes of glibc's heap
// (README.md, step 'Small group jobs'); a larger one takes a task node (80 bytes, 96 in the heap),
// as every group job does with the step off.
TEST(TaskMemory, AGroupJobOfUpTo32BytesTakesA56ByteBlock) {
  using wslab::sched::SmallJobBlock;
  using wslab::sched::TaskJob;
  EXPECT_EQ(cold_allocations_of<32>(SmallJobBlock::kBytes), 1000u) << "32 bytes: a block each";
  EXPECT_EQ(cold_allocations_of<32>(sizeof(TaskJob)), 0u) << "32 bytes: no node";
  EXPECT_EQ(cold_allocations_of<40>(sizeof(TaskJob)), 1000u) << "40 bytes: a node each";
  EXPECT_EQ(cold_allocations_of<40>(SmallJobBlock::kBytes), 0u) << "40 bytes: no block";
  EXPECT_EQ(cold_allocations_of<32>(sizeof(TaskJob), false), 1000u) << "step off: 80 bytes";
  EXPECT_EQ(cold_allocations_of<32>(SmallJobBlock::kBytes, false), 0u) << "step off";
}

// Within the bounds too, a waiter whose group is done returns: it hands in its tally before it
// would help (help_until_done.hpp), so an older task below its mark is not run on top of its frame
// only to find the group finished.
TEST(TaskMemory, AFinishedWaitDoesNotHelpFirst) {
  Scheduler pool(1);
  std::atomic<int> foreign{0};
  int foreign_when_wait_returned = -1;
  pool.spawn([&] {
    ASSERT_TRUE(wslab::help_allowed());
    TaskGroup g(pool);
    pool.spawn([&] { foreign.fetch_add(1); });
    g.run([] {});
    g.wait();
    foreign_when_wait_returned = foreign.load();
  });
  pool.wait_idle();
  EXPECT_EQ(foreign_when_wait_returned, 0);
  EXPECT_EQ(foreign.load(), 1);
}

// The callable's captures are destroyed before the group counts it finished: when wait()
// returns, nothing of a callable is left alive on the scheduler's path either.
TEST(TaskMemory, CapturesDieBeforeWaitReturns) {
  Scheduler pool(2);
  for (int round = 0; round < 200; ++round) {
    std::atomic<int> alive{0};
    struct Guard {
      std::atomic<int>* alive;
      explicit Guard(std::atomic<int>* a) : alive(a) { alive->fetch_add(1); }
      Guard(const Guard& o) : alive(o.alive) { alive->fetch_add(1); }
      Guard(Guard&& o) noexcept : alive(o.alive) { alive->fetch_add(1); }
      ~Guard() { alive->fetch_sub(1); }
    };
    {
      TaskGroup g(pool);
      for (int i = 0; i < 50; ++i)
        g.run([guard = Guard(&alive)] { (void)guard; });
      g.wait();
      ASSERT_EQ(alive.load(), 0) << "round " << round;
    }
  }
}

}  // namespace
