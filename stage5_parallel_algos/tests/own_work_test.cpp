// A task group's waiter on the scheduler runs its own work, whatever lies above the group's mark
// on its deque, without counting it as help (README.md, step 'Waits without help bounds'). The
// shapes here are the ones a help bound or a dig through the deque gets wrong: deep narrow trees
// with every level's pending siblings left on the deque (UTS's binomial trees), two groups of one
// frame, and a group whose work lands below where its first round's began.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "stage5_parallel_algos/fork_join/help_bounds.hpp"
#include "stage5_parallel_algos/threadpool.hpp"

namespace {

using wslab::TaskGroup;
using wslab::ThreadPool;

// Runs body() as one task of the pool (the root inside the pool, as a user's program runs) and
// waits for it.
template <class Body>
void run_inside(ThreadPool& pool, Body body) {
  pool.spawn(body);
  pool.wait_all();
}

// A chain `depth` levels deep; each level is one TaskGroup with `leaves` leaf callables pushed
// first and the next level pushed last, so the next level runs first (newest first) and every
// level's leaves wait on the deque under everything deeper: at the bottom the deque holds
// depth x leaves jobs of the levels above. Each node counts itself in `ran[node]`, and the
// deepest help depth any node saw goes to `max_help`.
struct NarrowTree {
  std::size_t depth;
  std::size_t leaves;
  std::unique_ptr<std::atomic<int>[]> ran;
  std::atomic<std::size_t> max_help{0};

  NarrowTree(std::size_t d, std::size_t l)
      : depth(d), leaves(l), ran(new std::atomic<int>[d * (l + 1) + 1]) {
    for (std::size_t i = 0; i < nodes(); ++i)
      ran[i].store(0, std::memory_order_relaxed);
  }
  std::size_t nodes() const { return depth * (leaves + 1) + 1; }

  void note(std::size_t node) {
    ran[node].fetch_add(1, std::memory_order_relaxed);
    std::size_t seen = max_help.load(std::memory_order_relaxed);
    const std::size_t now = wslab::current_help_depth();
    while (now > seen && !max_help.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
  }

  void level(ThreadPool& pool, std::size_t at) {
    note(at * (leaves + 1));
    if (at == depth) return;
    TaskGroup group(pool);
    for (std::size_t i = 1; i <= leaves; ++i)
      group.run([this, at, i] { note(at * (leaves + 1) + i); });
    group.run([this, &pool, at] { level(pool, at + 1); });
    group.wait();
  }

  void expect_each_node_once() const {
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < nodes(); ++i)
      wrong += ran[i].load() != 1 ? 1 : 0;
    EXPECT_EQ(wrong, 0u) << "nodes run other than exactly once, of " << nodes();
  }
};

// One worker: every node is the waiter's own work, run as such at any depth. Under help bounds
// the levels past the 64th would be help, counted (and past the bound, dug out from under every
// level's leaves: a scan of the whole deque per wait).
TEST(OwnWork, ADeepNarrowTreeOnOneWorkerIsAllOwnWork) {
  ThreadPool pool(1);
  NarrowTree tree(3000, 7);
  run_inside(pool, [&] { tree.level(pool, 0); });
  tree.expect_each_node_once();
  EXPECT_EQ(tree.max_help.load(), 0u) << "a waiter ran its own group's work as counted help";
}

// Two workers: thieves take levels and leaves; each node still runs exactly once.
TEST(OwnWork, ADeepNarrowTreeOnTwoWorkersRunsEachNodeOnce) {
  ThreadPool pool(2);
  for (int round = 0; round < 5; ++round) {
    NarrowTree tree(2000, 7);
    run_inside(pool, [&] { tree.level(pool, 0); });
    tree.expect_each_node_once();
  }
}

// The same chain from a thread outside the pool: the waiter there claims its listed callables,
// and the levels below run inside the pool.
TEST(OwnWork, ADeepNarrowTreeFromOutsideRunsEachNodeOnce) {
  ThreadPool pool(1);
  NarrowTree tree(1000, 3);
  tree.level(pool, 0);
  tree.expect_each_node_once();
}

// A chain of groups on a worker whose stack holds only about a hundred of its levels: the waiter's
// loop looks at the stack once and, past three quarters of it, runs each callable on a fresh stack
// (README.md, step 'A group's own work in one loop'). A loop that always called its callables
// directly would overflow the worker's stack here.
TEST(OwnWork, AGroupChainDeeperThanTheWorkersStackMovesToAFreshStack) {
  wslab::PoolOptions options;
  options.stack_size = 256 * 1024;
  ThreadPool pool(1, options);
  constexpr std::size_t kDepth = 1500;  // over 3 MiB of frames at 2 KiB of padding each
  std::vector<std::atomic<int>> ran(kDepth + 1);
  auto level = [&](auto& self, std::size_t at) -> void {
    volatile char pad[2048];  // a frame this large makes the chain outgrow the worker's stack
    pad[0] = static_cast<char>(at);
    ran[at].fetch_add(1, std::memory_order_relaxed);
    if (at == kDepth) return;
    TaskGroup group(pool);
    group.run([&] { self(self, at + 1); });
    group.wait();
    EXPECT_EQ(pad[0], static_cast<char>(at));
  };
  run_inside(pool, [&] { level(level, 0); });
  std::size_t wrong = 0;
  for (const auto& count : ran)
    wrong += count.load() != 1 ? 1 : 0;
  EXPECT_EQ(wrong, 0u) << "levels run other than exactly once, of " << ran.size();
}

// Two groups of one frame on one worker: waiting for the first may run the second's callables
// (they lie above the first's mark), and the second's wait then finds them done.
TEST(OwnWork, TwoGroupsOfOneFrameShareTheWaitersDeque) {
  ThreadPool pool(1);
  std::atomic<int> a{0}, b{0};
  std::atomic<std::size_t> help_seen{0};
  run_inside(pool, [&] {
    TaskGroup first(pool), second(pool);
    for (int i = 0; i < 100; ++i) {
      first.run([&] {
        help_seen.fetch_add(wslab::current_help_depth());
        a.fetch_add(1);
      });
      second.run([&] {
        help_seen.fetch_add(wslab::current_help_depth());
        b.fetch_add(1);
      });
    }
    first.wait();
    EXPECT_EQ(a.load(), 100);
    second.wait();
    EXPECT_EQ(b.load(), 100);
  });
  EXPECT_EQ(help_seen.load(), 0u);
}

// A group's mark is where its work begins this round, not where the group was made: here an older
// task sits on the deque when `late` is made, the worker then runs it (try_run_one(), as a helping
// waiter would), and `late`'s callable goes into the slot it left, below where the deque's bottom
// was when `late` was made. Its waiter still runs it as its own work.
TEST(OwnWork, AGroupsWorkBelowWhereItWasMadeIsStillItsOwn) {
  ThreadPool pool(1);
  std::atomic<int> older{0};
  std::atomic<std::size_t> late_help{99};
  run_inside(pool, [&] {
    pool.spawn([&] { older.fetch_add(1); });
    TaskGroup late(pool);
    EXPECT_TRUE(pool.scheduler().try_run_one());
    EXPECT_EQ(older.load(), 1) << "the worker did not run the older task";
    late.run([&] { late_help.store(wslab::current_help_depth()); });
    late.wait();
  });
  EXPECT_EQ(late_help.load(), 0u) << "late's callable ran as help, not as its waiter's own work";
}

}  // namespace
