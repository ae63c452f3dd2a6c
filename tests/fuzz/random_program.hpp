// One random program over the public API, run against one pool. Its shape comes from a 64-bit
// seed alone: every unit of work carries its own seed, from which it draws what it does (spawn,
// join, recursions that fork through a WorkerRef passed down, futures and continuations, nested
// task groups with cancel, coroutines that co_join children and await futures, a parallel
// algorithm on a random size, a documented misuse) and whether it ends by throwing. So the
// program is the same whichever thread runs which part, and a failure replays from its seed.
//
// What it checks: every unit runs exactly once (or is dropped exactly where the reference allows:
// a cancelled group's callable, the continuation of a failed future, a join's unstarted b through
// a WorkerRef when a throws); every result and every exception arrives where docs/reference.md
// says (join rethrows a's, else b's; a group rethrows one of its callables' and counts the others;
// co_join runs every child and rethrows the first thrower's in argument order; wait_idle()
// rethrows one of the spawned tasks'); every algorithm agrees with its sequential counterpart;
// every documented error is thrown where it must be; objects that outlive their pool behave as the
// lifetime rules say; and inside a stage-5 pool's tasks, TaskGroup(), join(a, b) and
// co_join(tasks) find that pool, whichever thread runs the task.
//
// Bounded on purpose: the random task groups nest at most kMaxGroupNesting deep, so that a
// program's work stays within its budget; deep nesting comes from three shapes of their own, a
// deep join recursion, a narrow chain of task groups hundreds of levels deep, and a chain of
// coroutines each sync_waiting the next, deeper than the help depth's bound. Wide rounds of one
// callable type, up to 136, are a shape of their own too.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "registry/pools.hpp"
#include "stage5_parallel_algos/threadpool.hpp"
#include "tests/fuzz/work_ledger.hpp"

namespace wslab::fuzz {

// What the program's work throws: not a std::exception, so the paths that carry "anything" are
// exercised, and the id says whose it is.
struct FuzzError {
  std::uint32_t id;
};

// SplitMix64: a statistically good 64-bit mix, cheap, and the same on every platform.
inline std::uint64_t mix(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed) noexcept : state_(seed) {}
  std::uint64_t next() noexcept { return mix(state_ += 0x632be59bd9b4e019ull); }
  std::uint64_t below(std::uint64_t n) noexcept { return n == 0 ? 0 : next() % n; }
  bool one_in(std::uint64_t n) noexcept { return below(n) == 0; }

 private:
  std::uint64_t state_;
};

// A failed check: what failed, and the program (pool, seed) it failed in. Exits with status 1.
[[noreturn]] void fail(const std::string& what);

#define WSLAB_FUZZ_CHECK(cond, what)                                                         \
  do {                                                                                       \
    if (!(cond))                                                                             \
      ::wslab::fuzz::fail(std::string("check failed: ") + #cond + ": " + std::string(what)); \
  } while (0)

struct Limits {
  std::size_t work_budget;    // units of work per program
  int max_depth;              // nesting of units
  std::size_t max_algo_size;  // elements of a parallel algorithm's input
};

inline constexpr int kMaxGroupNesting = 3;

// How a unit ends, decided by its seed: its value, or a throw (only where the caller allows).
struct Outcome {
  bool throws;
  int value;
};
inline Outcome outcome_of(std::uint64_t seed, bool may_throw) noexcept {
  const std::uint64_t h = mix(seed ^ 0x7468726f77ull);
  return {may_throw && h % 7 == 0, static_cast<int>((h >> 8) % 1000)};
}

// Calls f and checks that it throws E; `what` names the documented rule.
template <class E, class F>
void expect_throw(F&& f, const char* what) {
  try {
    f();
  } catch (const E&) {
    return;
  } catch (...) {
    fail(std::string("wrong exception type: ") + what);
  }
  fail(std::string("no exception: ") + what);
}

class RandomProgram {
 public:
  // `pool` is the pool under test seen through IThreadPool; `tp` is the ThreadPool wrapping it
  // when the program runs on wslab::ThreadPool (then spawn/wait_all are used too), else nullptr.
  RandomProgram(IThreadPool& pool, ThreadPool* tp, std::uint64_t seed, const Limits& limits)
      : pool_(pool), tp_(tp), seed_(seed), limits_(limits), ledger_(limits.work_budget) {}

  // The program: a few outside threads and this one each run root units; then the final wait,
  // which must rethrow a spawned task's exception exactly when one threw; then the ledger.
  void run() {
    Rng r(seed_);
    const std::size_t outsiders = r.below(4);
    std::vector<std::uint64_t> thread_seeds(outsiders + 1);
    for (auto& s : thread_seeds)
      s = r.next();
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < outsiders; ++t)
      threads.emplace_back([this, s = thread_seeds[t]] { run_roots(s); });
    run_roots(thread_seeds.back());
    for (auto& t : threads)
      t.join();
    final_wait();
    const std::string problem = ledger_.verify();
    WSLAB_FUZZ_CHECK(problem.empty(), problem);
  }

  const WorkLedger& ledger() const { return ledger_; }
  std::size_t checks() const { return checks_.load(std::memory_order_relaxed); }

 private:
  void run_roots(std::uint64_t seed) {
    Rng r(seed);
    const std::size_t roots = 1 + r.below(3);
    for (std::size_t i = 0; i < roots; ++i) {
      const std::uint64_t s = r.next();
      const auto id = ledger_.create(Kind::root, Fate::run, 0);
      if (!id) return;
      Ticket ticket(ledger_, *id);
      const Outcome expected = outcome_of(s, true);
      try {
        const int v = unit(ticket, s, 0, /*in_task=*/false, 0);
        WSLAB_FUZZ_CHECK(!expected.throws && v == expected.value, "a root's result");
      } catch (const FuzzError& e) {
        WSLAB_FUZZ_CHECK(expected.throws && e.id == *id, "a root's own exception");
      }
    }
  }

  void final_wait() {
    bool threw = false;
    try {
      if (tp_ != nullptr) {
        tp_->wait_all();
      } else {
        pool_.wait_idle();
      }
    } catch (const FuzzError&) {
      threw = true;
    }
    const std::size_t thrown = spawned_thrown_.load();
    WSLAB_FUZZ_CHECK(threw == (thrown > 0),
                     "wait_idle() rethrows a spawned task's exception exactly when one threw (" +
                         std::to_string(thrown) + " threw)");
    if (tp_ != nullptr && thrown > 0) {
      WSLAB_FUZZ_CHECK(tp_->dropped_exceptions() == thrown - 1,
                       "dropped_exceptions() counts the others");
    }
    count_check();
  }

  void count_check() { checks_.fetch_add(1, std::memory_order_relaxed); }

  // Runs one unit: punches its ticket, does what its seed says, ends as outcome_of() says.
  int unit(Ticket& ticket, std::uint64_t seed, int depth, bool in_task, int nesting,
           bool may_throw = true) {
    const std::uint32_t id = ticket.punch();
    struct Finish {
      WorkLedger& ledger;
      std::uint32_t id;
      ~Finish() { ledger.finished(id); }
    } finish{ledger_, id};
    Rng r(seed);
    const int ops = depth < limits_.max_depth ? static_cast<int>(r.below(depth < 2 ? 4 : 3)) : 0;
    for (int i = 0; i < ops; ++i)
      op(r, depth, in_task, nesting);
    const Outcome o = outcome_of(seed, may_throw);
    if (o.throws) throw FuzzError{id};
    return o.value;
  }

  void op(Rng& r, int depth, bool in_task, int nesting) {
    switch (r.below(13)) {
      case 0:
      case 1:
        op_spawn(r, depth, nesting);
        break;
      case 2:
      case 3:
        op_join(r, depth, in_task, nesting);
        break;
      case 4:
      case 5:
        op_futures(r, depth, nesting);
        break;
      case 6:
      case 7:
        op_group(r, depth, in_task, nesting);
        break;
      case 8:
      case 9:
        op_algorithm(r);
        break;
      case 10:
        op_coroutine(r, depth, nesting);
        break;
      case 11:
        op_misuse(in_task);
        break;
      default:
        // Rarely, and only near the top: a join recursion deep enough for the stack guard to
        // move it to a fresh thread once or twice (stage5_parallel_algos/fork_join/stack_room.hpp).
        if (depth <= 1 && r.one_in(16)) op_deep_join(r, in_task);
        // As rarely: a chain of task groups hundreds of levels deep, each level's leaves left
        // queued under everything deeper (the shape of UTS's binomial trees).
        if (depth <= 1 && r.one_in(16)) op_narrow_tree(r);
        // And a group handed from a task to this thread between run() and wait(): only from a
        // root, run by the program's own thread (deeper, an outside join may run the unit on a
        // worker, which must not block on the task that makes the group).
        if (depth == 0 && r.one_in(2)) op_handed_group(r);
        // And coroutines each of which sync_waits the next, deeper than the help depth's bound.
        if (depth <= 1 && r.one_in(16)) op_sync_wait_chain(r);
        // And a recursion that forks through the handle each half receives.
        if (r.one_in(3)) op_ref_tree(r, depth, nesting);
        // And a wide round of one callable type, as stage 5 runs its frames in runs.
        if (depth <= 1 && r.one_in(4)) op_wide_group(r);
        break;
    }
  }

  // Fire and forget: spawned tasks report to the final wait.
  void op_spawn(Rng& r, int depth, int nesting) {
    const std::size_t k = 1 + r.below(4);
    for (std::size_t i = 0; i < k; ++i) {
      const std::uint64_t s = r.next();
      const auto id = ledger_.create(Kind::spawned, Fate::run, depth + 1);
      if (!id) return;
      auto task = [this, t = Ticket(ledger_, *id), s, depth, nesting]() mutable {
        try {
          unit(t, s, depth + 1, true, nesting);
        } catch (const FuzzError&) {
          spawned_thrown_.fetch_add(1);
          throw;
        }
      };
      if (tp_ != nullptr && r.one_in(2)) {
        tp_->spawn(std::move(task));
      } else {
        pool_.submit(Task(std::move(task)));
      }
    }
  }

  // join(a, b): both run once; the pair comes back, or a's exception, else b's. A third of the
  // joins fork through a WorkerRef from with_worker() (fork_join/worker_ref.hpp), where b runs
  // at most once when a throws: dropped if no thread has started it. Half of join(pool, a, b)'s
  // pass b as a temporary, which a worker moves into its deque's slot (README.md, step 'join's b
  // in the slot'), the others as an lvalue, which stays where it is.
  void op_join(Rng& r, int depth, bool in_task, int nesting) {
    const std::uint64_t sa = r.next(), sb = r.next();
    const Outcome oa = outcome_of(sa, true), ob = outcome_of(sb, true);
    // Inside a task, a third of the joins leave the pool to be found (drawn from the seeds
    // already taken, so the program's shape is the same either way).
    const bool unnamed = in_task && finds_pool_ && (sa ^ sb) % 3 == 0;
    const bool by_handle = !unnamed && mix(sa ^ sb) % 3 == 1;
    const bool b_temporary = mix(sa + sb) % 2 == 0;
    const auto ia = ledger_.create(Kind::join_a, Fate::run, depth + 1);
    if (!ia) return;
    const auto ib =
        ledger_.create(Kind::join_b, by_handle && oa.throws ? Fate::either : Fate::run, depth + 1);
    if (!ib) return ledger_.unused(*ia);
    Ticket ta(ledger_, *ia), tb(ledger_, *ib);
    // Both halves are tasks of the pool, whichever thread runs them (docs/reference.md, join).
    auto a = [&] { return unit(ta, sa, depth + 1, true, nesting); };
    auto b = [&] { return unit(tb, sb, depth + 1, true, nesting); };
    auto by_worker_ref = [&] {
      return with_worker(pool_, [&](WorkerRef w) {
        return w.join([&](WorkerRef) { return a(); }, [&](WorkerRef) { return b(); });
      });
    };
    if (unnamed) check_current_pool();
    try {
      auto [va, vb] = unnamed       ? join(a, b)
                      : by_handle   ? by_worker_ref()
                      : b_temporary ? join(pool_, a, [&] { return b(); })
                                    : join(pool_, a, b);
      WSLAB_FUZZ_CHECK(!oa.throws && !ob.throws, "join returned although a callable threw");
      WSLAB_FUZZ_CHECK(va == oa.value && vb == ob.value, "join's results");
    } catch (const FuzzError& e) {
      WSLAB_FUZZ_CHECK(oa.throws || ob.throws, "join threw although neither callable did");
      WSLAB_FUZZ_CHECK(e.id == (oa.throws ? *ia : *ib), "join rethrows a's exception, else b's");
    }
    count_check();
  }

  // async, then, when_all, when_any, get: values and exceptions arrive where they must.
  void op_futures(Rng& r, int depth, int nesting) {
    const std::size_t m = 1 + r.below(4);
    const std::uint64_t mode = r.below(4);
    // when_all reports every failed input but the first on stderr: at most one may fail there.
    const std::size_t may_fail = mode == 1 ? r.below(m) : m;
    std::vector<Future<int>> futures;
    std::vector<Outcome> expected;
    std::vector<std::uint32_t> ids;
    for (std::size_t i = 0; i < m; ++i) {
      const std::uint64_t s = r.next();
      const bool may_throw = mode != 1 || i == may_fail;
      const auto id = ledger_.create(Kind::future_job, Fate::run, depth + 1);
      if (!id) break;
      futures.push_back(
          async(pool_, [this, t = Ticket(ledger_, *id), s, depth, nesting, may_throw]() mutable {
            return unit(t, s, depth + 1, true, nesting, may_throw);
          }));
      expected.push_back(outcome_of(s, may_throw));
      ids.push_back(*id);
    }
    if (futures.empty()) return;
    if (mode == 3) {
      // Each future gets a continuation, which runs only if its antecedent succeeded.
      for (std::size_t i = 0; i < futures.size(); ++i) {
        const std::uint64_t s = r.next();
        const auto id = ledger_.create(Kind::continuation,
                                       expected[i].throws ? Fate::drop : Fate::run, depth + 1);
        if (!id) break;
        futures[i] = std::move(futures[i])
                         .then([this, t = Ticket(ledger_, *id), s, depth, nesting](int v) mutable {
                           return v + unit(t, s, depth + 1, true, nesting, false);
                         });
        if (!expected[i].throws) expected[i].value += outcome_of(s, false).value;
      }
    }
    auto check_get = [&](Future<int>& f, std::size_t i) {
      try {
        const int v = f.get();
        WSLAB_FUZZ_CHECK(!expected[i].throws && v == expected[i].value, "a future's value");
      } catch (const FuzzError& e) {
        WSLAB_FUZZ_CHECK(expected[i].throws && e.id == ids[i], "a future's exception");
      }
      WSLAB_FUZZ_CHECK(!f.valid(), "get() consumes the future");
      count_check();
    };
    if (mode == 1) {
      Future<std::vector<int>> all = when_all(std::move(futures));
      try {
        const std::vector<int> values = all.get();
        WSLAB_FUZZ_CHECK(values.size() == expected.size(), "when_all's size");
        for (std::size_t i = 0; i < values.size(); ++i) {
          WSLAB_FUZZ_CHECK(!expected[i].throws && values[i] == expected[i].value,
                           "when_all's values, in input order");
        }
      } catch (const FuzzError& e) {
        WSLAB_FUZZ_CHECK(
            may_fail < expected.size() && expected[may_fail].throws && e.id == ids[may_fail],
            "when_all carries the failed input's exception");
      }
      count_check();
      return;
    }
    if (mode == 2) {
      const std::size_t first = when_any(futures);
      WSLAB_FUZZ_CHECK(first < futures.size() && futures[first].is_ready(),
                       "when_any returns a ready input");
    }
    for (std::size_t i = 0; i < futures.size(); ++i)
      check_get(futures[i], i);
  }

  // A root CoTask, run with sync_wait() (or ThreadPool::run()) from this unit, co_joins 2-4
  // children in a random tree of pair and vector joins. Every child runs, whatever the others
  // throw, and has finished when the root returns; the values come back in argument order, or
  // the first thrower's exception in argument order does.
  void op_coroutine(Rng& r, int depth, int nesting) {
    const std::size_t k = 2 + r.below(3);
    const std::uint64_t shape = r.next();
    const bool by_run = r.one_in(2) && tp_ != nullptr;
    const bool unnamed = r.one_in(3) && finds_pool_;
    std::vector<CoTask<int>> children;
    std::vector<Outcome> expected;
    std::vector<std::uint32_t> ids;
    for (std::size_t i = 0; i < k; ++i) {
      const std::uint64_t s = r.next();
      const auto id = ledger_.create(Kind::co_child, Fate::run, depth + 1);
      if (!id) break;
      children.push_back(co_child(Ticket(ledger_, *id), s, depth + 1, nesting, r.below(4)));
      expected.push_back(outcome_of(s, true));
      ids.push_back(*id);
    }
    if (children.empty()) return;
    const auto throws = [](const Outcome& o) { return o.throws; };
    const std::size_t first_thrower = static_cast<std::size_t>(
        std::find_if(expected.begin(), expected.end(), throws) - expected.begin());
    try {
      CoTask<std::vector<int>> root = co_joined(std::move(children), shape, unnamed);
      const std::vector<int> values =
          by_run ? tp_->run(std::move(root)) : sync_wait(pool_, std::move(root));
      WSLAB_FUZZ_CHECK(first_thrower == expected.size(), "co_join returned although a child threw");
      WSLAB_FUZZ_CHECK(values.size() == expected.size(), "co_join's number of results");
      for (std::size_t i = 0; i < values.size(); ++i)
        WSLAB_FUZZ_CHECK(values[i] == expected[i].value, "co_join's results, in argument order");
    } catch (const FuzzError& e) {
      WSLAB_FUZZ_CHECK(first_thrower < expected.size(), "co_join threw although no child did");
      WSLAB_FUZZ_CHECK(e.id == ids[first_thrower],
                       "co_join rethrows the first thrower's exception in argument order");
    }
    for (const std::uint32_t id : ids)
      WSLAB_FUZZ_CHECK(ledger_.ran_once(id), "every child of a co_join has run when it returns");
    count_check();
  }

  // The join tree: one child is awaited inline; more are joined by one vector join, or by a pair
  // join of the first and the rest joined likewise (nested, the first thrower in argument order
  // still wins). Two bits of `shape` per level choose.
  CoTask<std::vector<int>> co_joined(std::vector<CoTask<int>> children, std::uint64_t shape,
                                     bool unnamed) {
    std::vector<int> values;
    if (children.size() == 1) {
      values.push_back(co_await std::move(children.front()));
    } else if (shape % 2 == 0) {
      if (unnamed) {
        check_current_pool();
        values = co_await co_join(std::move(children));
      } else {
        values = co_await co_join(pool_, std::move(children));
      }
    } else if (children.size() == 2 && shape % 4 == 1) {
      auto [a, b] = co_await co_join(pool_, std::move(children[0]), std::move(children[1]));
      values = {a, b};
    } else {
      CoTask<int> first = std::move(children.front());
      children.erase(children.begin());
      CoTask<std::vector<int>> rest = co_joined(std::move(children), shape / 4, unnamed);
      auto [a, others] = co_await co_join(pool_, std::move(first), std::move(rest));
      values.push_back(a);
      values.insert(values.end(), others.begin(), others.end());
    }
    co_return values;
  }

  // A child: its unit, run here (0), or after moving onto a worker with schedule() (1), or as the
  // job of a future it awaits, by value (2) or, once first_ready() has found it ready without
  // consuming it, as an lvalue that the co_await consumes (3).
  CoTask<int> co_child(Ticket t, std::uint64_t s, int depth, int nesting, std::uint64_t how) {
    if (how == 1) co_await schedule(pool_);
    if (how <= 1) co_return unit(t, s, depth, true, nesting);
    Future<int> f = async(pool_, [this, t = std::move(t), s, depth, nesting]() mutable {
      return unit(t, s, depth, true, nesting);
    });
    if (how == 2) co_return co_await std::move(f);
    const std::size_t ready = co_await first_ready(f);
    WSLAB_FUZZ_CHECK(ready == 0 && f.is_ready() && f.valid(),
                     "first_ready() returns a ready input and consumes nothing");
    try {
      const int v = co_await f;
      WSLAB_FUZZ_CHECK(!f.valid(), "co_await consumes an lvalue future");
      co_return v;
    } catch (const FuzzError&) {
      WSLAB_FUZZ_CHECK(!f.valid(), "co_await consumes an lvalue future that failed");
      throw;
    }
  }

  // A round of 17 to 136 callables of one type, enough for stage 5's waiter to run them as a run of
  // one frame function (its README, step 'Runs of one frame function'). Some add a callable of
  // another type to the round as they run; some wait for a nested round of 24 of the same type,
  // whose run must stop at that round's mark. Each callable runs exactly once.
  void op_wide_group(Rng& r) {
    constexpr std::uint32_t kNested = 24;
    const std::uint32_t n = 17 + static_cast<std::uint32_t>(r.below(120));
    std::vector<std::atomic<int>> ran(std::size_t{n} * (2 + kNested));  // round, added, nested
    std::vector<std::uint8_t> flags(n);  // 1: adds a callable, 2: waits for a nested round
    for (auto& f : flags)
      f = static_cast<std::uint8_t>(r.below(8) == 0 ? 1 : r.below(8) == 0 ? 2 : 0);
    struct Wide {  // trivially copyable: a frame on a stage-5 worker
      std::vector<std::atomic<int>>* ran;
      TaskGroup* group;
      IThreadPool* pool;
      std::uint32_t at, n;
      std::uint8_t flags;
      void operator()() const {
        (*ran)[at].fetch_add(1, std::memory_order_relaxed);
        if (flags & 1) {
          group->run([ran = ran, at = at, n = n] {
            (*ran)[n + at].fetch_add(1, std::memory_order_relaxed);
          });
        }
        if (flags & 2) {
          TaskGroup inner(*pool);
          for (std::uint32_t j = 0; j < kNested; ++j)
            inner.run(Wide{ran, &inner, pool, 2 * n + at * kNested + j, n, 0});
          inner.wait();
        }
      }
    };
    {
      TaskGroup group(pool_);
      for (std::uint32_t i = 0; i < n; ++i)
        group.run(Wide{&ran, &group, &pool_, i, n, flags[i]});
      group.wait();
    }
    std::string wrong;
    for (std::uint32_t i = 0; i < n && wrong.empty(); ++i) {
      const int added = flags[i] & 1 ? 1 : 0;
      const int nested = flags[i] & 2 ? 1 : 0;
      if (ran[i].load() != 1 || ran[n + i].load() != added)
        wrong = ": callable " + std::to_string(i);
      for (std::uint32_t j = 0; j < kNested && wrong.empty(); ++j) {
        if (ran[2 * n + i * kNested + j].load() != nested)
          wrong = ": nested callable " + std::to_string(j) + " of " + std::to_string(i);
      }
    }
    WSLAB_FUZZ_CHECK(wrong.empty(), "every callable of a wide round runs exactly once" + wrong);
  }

  // A chain of task groups `levels` deep: each level runs its leaves, then the next level, and
  // waits; so a waiter's own work lies above older levels' leaves on its deque, and past the
  // 64th level every wait is deeper than any help bound. Each node runs exactly once.
  void op_narrow_tree(Rng& r) {
    const std::size_t levels = 20 + r.below(300);
    const std::size_t leaves = r.below(4);
    std::vector<std::atomic<int>> ran((levels - 1) * (leaves + 1) + 1);  // the last: no leaves
    struct Level {
      IThreadPool& pool;
      std::vector<std::atomic<int>>& ran;
      std::size_t levels, leaves;
      void operator()(std::size_t at) const {
        ran[at * (leaves + 1)].fetch_add(1, std::memory_order_relaxed);
        if (at + 1 == levels) return;
        TaskGroup group(pool);
        for (std::size_t i = 1; i <= leaves; ++i)
          group.run([this, at, i] { ran[at * (leaves + 1) + i].fetch_add(1); });
        group.run([this, at] { (*this)(at + 1); });
        group.wait();
      }
    } level{pool_, ran, levels, leaves};
    level(0);
    const std::string wrong = not_each_once(ran);
    WSLAB_FUZZ_CHECK(wrong.empty(),
                     "every node of a narrow tree of task groups runs exactly once" + wrong);
    count_check();
  }

  // A group made on the heap inside a task and handed to this thread (a root's: no worker),
  // which waits for it while its callables run where the group was made, each adding one more
  // there. Every callable exactly once, all of them before wait() returns.
  void op_handed_group(Rng& r) {
    const std::size_t k = 1 + r.below(6);
    std::vector<std::atomic<int>> ran(2 * k);
    std::promise<TaskGroup*> handed;
    pool_.submit([&] {
      auto group = std::make_unique<TaskGroup>(pool_);
      for (std::size_t i = 0; i < k; ++i) {
        group->run([&ran, g = group.get(), i, k] {
          ran[i].fetch_add(1);
          g->run([&ran, i, k] { ran[k + i].fetch_add(1); });
        });
      }
      handed.set_value(group.release());
    });
    const std::unique_ptr<TaskGroup> group(handed.get_future().get());
    group->wait();
    const std::string wrong = not_each_once(ran);
    WSLAB_FUZZ_CHECK(wrong.empty(),
                     "a group waited on another thread than where it was made runs every "
                     "callable once before wait() returns" +
                         wrong);
    count_check();
  }

  // Empty when each counter reads 1; else, for a failure's message, how many read 0 and how many
  // more (tests/exactly_once.hpp's count, without GoogleTest).
  template <class Count>
  static std::string not_each_once(const std::vector<std::atomic<Count>>& ran) {
    std::size_t never = 0, more = 0;
    for (const auto& n : ran) {
      const Count v = n.load();
      if (v == 0) ++never;
      if (v > 1) ++more;
    }
    if (never == 0 && more == 0) return {};
    return " (of " + std::to_string(ran.size()) + ": " + std::to_string(never) + " not run, " +
           std::to_string(more) + " run more than once)";
  }

  // What TaskGroup() and join(a, b) are about to find, inside a task of a stage-5 pool.
  void check_current_pool() const {
    WSLAB_FUZZ_CHECK(current_pool() == &pool_,
                     "inside a task, the pool found is the task's pool, whichever thread runs it");
  }

  // What a group's callable knows of its round, and of itself.
  struct GroupRound {
    std::atomic<std::size_t>& thrown;
    TaskGroup& group;
  };
  struct GroupCallArgs {
    int depth;
    std::int16_t nesting;
    bool cancels;
  };
  // What the callables of 32 bytes share: the program, the round, its depth and nesting, which
  // callable (by its index) cancels the group, and each callable's seed.
  struct SmallGroupRound {
    RandomProgram& program;
    GroupRound& round;
    GroupCallArgs args;
    std::size_t cancel_at;
    std::array<std::uint64_t, 5> seeds;
  };
  void group_call(Ticket& t, std::uint64_t s, GroupCallArgs args, GroupRound& round) {
    try {
      unit(t, s, args.depth + 1, true, args.nesting + 1);
    } catch (const FuzzError&) {
      round.thrown.fetch_add(1);
      throw;
    }
    if (args.cancels) round.group.cancel();
  }

  // A task group, perhaps nested, perhaps cancelled by its owner or by one of its callables.
  void op_group(Rng& r, int depth, bool in_task, int nesting) {
    if (nesting >= kMaxGroupNesting) return op_join(r, depth, in_task, nesting);
    const std::size_t k = 1 + r.below(5);  // at most SmallGroupRound::seeds' size
    // Inside a task, the groups of three callables find their pool. One group in three lives on
    // the heap (stage 5 queues group jobs from its home wherever the group lives).
    std::optional<TaskGroup> made;
    std::unique_ptr<TaskGroup> on_heap;
    const bool heap = r.one_in(3);
    if (in_task && finds_pool_ && k % 3 == 0) {
      check_current_pool();
      if (heap) {
        on_heap = std::make_unique<TaskGroup>();
      } else {
        made.emplace();
      }
    } else if (heap) {
      on_heap = std::make_unique<TaskGroup>(pool_);
    } else {
      made.emplace(pool_);
    }
    TaskGroup& group = heap ? *on_heap : *made;
    const std::uint64_t cancel_mode = r.one_in(5) ? 1 + r.below(2) : 0;  // 1 owner, 2 callable
    const std::size_t cancel_at = r.below(k);
    std::atomic<std::size_t> thrown{0};
    std::vector<std::uint32_t> throwers;
    // A third of the rounds queue callables of 32 bytes, which a group made on a worker keeps as
    // group jobs in small blocks (stage 5's steps 'Group jobs' and 'Small group jobs'), a third
    // callables of 48 bytes, group jobs in task nodes' memory, and the others callables of 64
    // bytes, which go into task nodes with their task boxed.
    const std::uint64_t size_class = r.below(3);
    GroupRound round{thrown, group};
    SmallGroupRound small{*this,
                          round,
                          GroupCallArgs{depth, static_cast<std::int16_t>(nesting), false},
                          cancel_mode == 2 ? cancel_at : k,
                          {}};
    for (std::size_t i = 0; i < k; ++i) {
      const std::uint64_t s = r.next();
      const auto id =
          ledger_.create(Kind::group, cancel_mode != 0 ? Fate::either : Fate::run, depth + 1);
      if (!id) break;
      if (outcome_of(s, true).throws) throwers.push_back(*id);
      const bool cancels = cancel_mode == 2 && i == cancel_at;
      if (size_class == 0) {
        small.seeds[i] = s;  // before the push publishes the callable
        auto call = [t = Ticket(ledger_, *id), i, &small]() mutable {
          GroupCallArgs args = small.args;
          args.cancels = i == small.cancel_at;
          small.program.group_call(t, small.seeds[i], args, small.round);
        };
        static_assert(sizeof(call) == 32);
        group.run(std::move(call));
      } else if (size_class == 1) {
        const GroupCallArgs args{depth, static_cast<std::int16_t>(nesting), cancels};
        auto call = [this, t = Ticket(ledger_, *id), s, args, &round]() mutable {
          group_call(t, s, args, round);
        };
        static_assert(sizeof(call) == 48);
        group.run(std::move(call));
      } else {
        auto call = [this, t = Ticket(ledger_, *id), s, depth, nesting, cancels, &thrown,
                     &group]() mutable {
          GroupRound here{thrown, group};
          group_call(t, s, GroupCallArgs{depth, static_cast<std::int16_t>(nesting), cancels}, here);
        };
        static_assert(sizeof(call) == 64);
        group.run(std::move(call));
      }
      if (cancel_mode == 1 && i == cancel_at) group.cancel();
    }
    if (r.one_in(8)) {
      expect_throw<std::invalid_argument>([&] { group.run(std::function<void()>{}); },
                                          "TaskGroup::run() of an empty callable");
    }
    try {
      group.wait();
      WSLAB_FUZZ_CHECK(thrown.load() == 0, "wait() returned although a callable threw");
    } catch (const FuzzError& e) {
      const std::size_t n = thrown.load();
      WSLAB_FUZZ_CHECK(n > 0, "wait() threw although no callable did");
      WSLAB_FUZZ_CHECK(std::find(throwers.begin(), throwers.end(), e.id) != throwers.end(),
                       "wait() rethrows one of its callables' exceptions");
      WSLAB_FUZZ_CHECK(group.dropped_exceptions() == n - 1, "dropped_exceptions() counts the rest");
    }
    WSLAB_FUZZ_CHECK(!group.is_cancelled(), "wait() resets cancellation");
    count_check();
  }

  // A parallel algorithm on a random size and grain, checked against the sequential result;
  // sometimes the element function throws once, and that exception must come out.
  void op_algorithm(Rng& r) {
    const std::size_t n = r.one_in(3) ? r.below(64) : r.below(limits_.max_algo_size + 1);
    const std::size_t grain = r.one_in(2) ? 0 : 1 + r.below(256);
    std::vector<std::int64_t> v(n);
    for (auto& x : v)
      x = static_cast<std::int64_t>(r.below(1000));
    const bool throwing = n > 0 && r.one_in(8);
    const std::size_t throw_at = throwing ? r.below(n) : n;
    constexpr std::uint32_t kAlgorithmError = 0xA160u;
    bool threw = false;
    const auto adds_non_negatives = [](std::int64_t a, std::int64_t b) {
      if (a < 0 || b < 0) throw FuzzError{kAlgorithmError};
      return a + b;
    };
    const std::uint64_t which = r.below(8);
    try {
      switch (which) {
        case 0: {  // parallel_for over indices: each exactly once
          std::vector<std::atomic<std::uint8_t>> seen(n);
          parallel_for(
              pool_, std::size_t{0}, n,
              [&](std::size_t i) {
                if (i == throw_at) throw FuzzError{kAlgorithmError};
                seen[i].fetch_add(1, std::memory_order_relaxed);
              },
              grain);
          const std::string wrong = not_each_once(seen);
          WSLAB_FUZZ_CHECK(wrong.empty(), "parallel_for visits each index once" + wrong);
          break;
        }
        case 1: {  // parallel_for over elements
          std::vector<std::int64_t> expect = v;
          for (auto& x : expect)
            x = x * 3 + 1;
          parallel_for(
              pool_, v.begin(), v.end(),
              [&](std::int64_t& x) {
                if (&x - v.data() == static_cast<std::ptrdiff_t>(throw_at))
                  throw FuzzError{kAlgorithmError};
                x = x * 3 + 1;
              },
              grain);
          WSLAB_FUZZ_CHECK(v == expect, "parallel_for over elements");
          break;
        }
        case 2: {
          const std::int64_t expect = std::accumulate(v.begin(), v.end(), std::int64_t{7});
          if (throwing) v[throw_at] = -1;  // the operator throws on the one negative element
          const std::int64_t got = parallel_reduce(pool_, v.begin(), v.end(), std::int64_t{7},
                                                   adds_non_negatives, grain);
          WSLAB_FUZZ_CHECK(got == expect, "parallel_reduce");
          break;
        }
        case 3: {
          std::int64_t expect = 0;
          for (auto x : v)
            expect += x * x;
          const std::int64_t got = parallel_transform_reduce(
              pool_, v.begin(), v.end(), std::int64_t{0}, std::plus<>{},
              [&](const std::int64_t& x) {
                if (&x - v.data() == static_cast<std::ptrdiff_t>(throw_at))
                  throw FuzzError{kAlgorithmError};
                return x * x;
              },
              grain);
          WSLAB_FUZZ_CHECK(got == expect, "parallel_transform_reduce");
          break;
        }
        case 4: {
          std::vector<std::int64_t> expect(n), out(n);
          std::inclusive_scan(v.begin(), v.end(), expect.begin());
          // The operator throws on the one negative operand; a single element is no operand.
          if (throwing && n >= 2) v[throw_at] = -1;
          parallel_inclusive_scan(pool_, v.begin(), v.end(), out.begin(), adds_non_negatives,
                                  ScanGrain{grain});
          WSLAB_FUZZ_CHECK(out == expect, "parallel_inclusive_scan");
          break;
        }
        case 5: {
          std::vector<std::int64_t> expect(n);
          std::exclusive_scan(v.begin(), v.end(), expect.begin(), std::int64_t{5});
          if (throwing) v[throw_at] = -1;
          parallel_exclusive_scan(pool_, v.begin(), v.end(), v.begin(), std::int64_t{5},
                                  adds_non_negatives, grain);
          WSLAB_FUZZ_CHECK(v == expect, "parallel_exclusive_scan in place");
          break;
        }
        case 6: {
          std::vector<std::int64_t> expect = v;
          std::sort(expect.begin(), expect.end(), std::greater<>{});
          parallel_sort(pool_, v.begin(), v.end(), std::greater<>{});
          WSLAB_FUZZ_CHECK(v == expect, "parallel_sort");
          break;
        }
        default: {  // stability: equal keys keep their order
          std::vector<std::pair<std::int64_t, std::size_t>> p(n), expect;
          for (std::size_t i = 0; i < n; ++i)
            p[i] = {v[i] % 16, i};
          expect = p;
          auto by_key = [](const auto& a, const auto& b) { return a.first < b.first; };
          std::stable_sort(expect.begin(), expect.end(), by_key);
          parallel_stable_sort(pool_, p.begin(), p.end(), by_key);
          WSLAB_FUZZ_CHECK(p == expect, "parallel_stable_sort");
          break;
        }
      }
    } catch (const FuzzError& e) {
      WSLAB_FUZZ_CHECK(e.id == kAlgorithmError, "an algorithm's exception");
      threw = true;
    }
    // A scan combines every element with op (the inclusive scan's first only once there is a
    // second).
    const bool could_throw = throwing && (which <= 3 || which == 5 || (which == 4 && n >= 2));
    WSLAB_FUZZ_CHECK(threw == could_throw, "an algorithm throws exactly when its function threw (" +
                                               std::to_string(which) + ", n " + std::to_string(n) +
                                               ")");
    count_check();
  }

  // A recursion over a binary tree that forks through the handle each half receives, the shape
  // WorkerRef is for (fork_join/worker_ref.hpp): passed down level by level, a worker's forks
  // take the fast path (b's frame built in the split deque's slot, shared when thieves have
  // emptied the shared part, waited for when stolen). Each node's b is, by its seed, a small
  // temporary (built in the slot), a temporary holding a shared_ptr (moved into the slot), or an
  // lvalue holding one (its frame left in the joining stack). A leaf is a unit that may throw; a
  // node returns the sum of its halves. A leaf with a throwing leaf to its left lies under the b
  // of a node whose a throws, and runs only if a thread started that b (Fate::either); any other
  // runs exactly once. What reaches the top is the first throwing leaf's exception, left to right
  // (a's wins over b's at every node). On a worker the handle is the worker's; on any other
  // thread (a root, a half that an outside join runs itself) it is the guest seat's, or one off
  // the workers whose joins take the general path, as on the other stages' pools.
  struct RefTree {
    RandomProgram& program;
    std::vector<Ticket>& tickets;
    const std::vector<std::uint64_t>& seeds;
    int leaf_depth, nesting;

    int node(WorkerRef w, std::size_t lo, std::size_t hi) const {
      if (hi - lo == 1) {
        // One leaf in eight does work of its own (spawns, joins, groups) under the tree.
        const int depth = mix(seeds[lo]) % 8 == 0 ? leaf_depth : program.limits_.max_depth;
        return program.unit(tickets[lo], seeds[lo], depth, true, nesting);
      }
      const std::size_t mid = lo + (hi - lo) / 2;
      auto a = [this, lo, mid](WorkerRef h) { return node(h, lo, mid); };
      // b holding a shared_ptr: not trivially copyable, so moved into the slot as a temporary,
      // and left in the joining stack as an lvalue.
      auto b_with_token = [this, mid, hi] {
        return [this, mid, hi, token = std::make_shared<int>(1)](WorkerRef h) {
          return node(h, mid, hi) * *token;
        };
      };
      switch (mix(seeds[lo] ^ hi) % 3) {
        case 0: {
          auto [x, y] = w.join(a, [this, mid, hi](WorkerRef h) { return node(h, mid, hi); });
          return x + y;
        }
        case 1: {
          auto [x, y] = w.join(a, b_with_token());
          return x + y;
        }
        default: {
          auto b = b_with_token();
          auto [x, y] = w.join(a, b);
          return x + y;
        }
      }
    }
  };
  void op_ref_tree(Rng& r, int depth, int nesting) {
    std::vector<std::uint64_t> seeds(1 + r.below(96));
    for (auto& s : seeds)
      s = r.next();
    std::vector<Ticket> tickets;
    tickets.reserve(seeds.size());
    std::optional<std::uint32_t> first_thrower;
    int sum = 0;
    for (const std::uint64_t s : seeds) {
      const auto id =
          ledger_.create(Kind::ref_leaf, first_thrower ? Fate::either : Fate::run, depth + 1);
      if (!id) break;  // the budget is spent: a tree of the leaves made so far
      tickets.emplace_back(ledger_, *id);
      const Outcome o = outcome_of(s, true);
      if (o.throws && !first_thrower) first_thrower = *id;
      sum += o.value;
    }
    if (tickets.empty()) return;
    const std::size_t leaves = tickets.size();
    const RefTree tree{*this, tickets, seeds, depth + 1, nesting};
    try {
      const int v = with_worker(pool_, [&](WorkerRef w) { return tree.node(w, 0, leaves); });
      WSLAB_FUZZ_CHECK(!first_thrower, "a WorkerRef recursion returned although a leaf threw");
      WSLAB_FUZZ_CHECK(v == sum, "a WorkerRef recursion's sum of its leaves");
    } catch (const FuzzError& e) {
      WSLAB_FUZZ_CHECK(first_thrower && e.id == *first_thrower,
                       "a WorkerRef recursion rethrows its first throwing leaf's exception");
    }
    count_check();
  }

  // Each level pins kPad bytes of stack, so that the guard's move comes after a few hundred
  // levels; at the bottom, the checks of op_misuse() (a moved recursion is still the same task).
  static constexpr std::size_t kPad = 16 * 1024;
  void deep_join(int moves_wanted, int moves_seen, int level, std::thread::id previous,
                 bool in_task) {
    std::array<char, kPad> pad;
    pad[0] = static_cast<char>(level);
    asm volatile("" : : "r"(pad.data()) : "memory");  // keeps the pad on the stack
    const std::thread::id me = std::this_thread::get_id();
    if (me != previous) ++moves_seen;
    if (moves_seen > moves_wanted || level >= 1'500) {
      WSLAB_FUZZ_CHECK(moves_seen > moves_wanted, "the stack guard moved a deep join recursion");
      op_misuse(in_task);
      return;
    }
    join(pool_, [&] { deep_join(moves_wanted, moves_seen, level + 1, me, in_task); }, [] {});
  }
  void op_deep_join(Rng& r, bool in_task) {
    deep_join(1 + static_cast<int>(r.below(2)), 0, 0, std::thread::id{}, in_task);
    count_check();
  }

  // A worker's sync_wait starts its driver itself, as own work, whatever the help depth: nested
  // past kMaxHelpDepth, the chain still ends (SyncWait.NestedPastTheHelpDepthBoundOnOneWorker...).
  CoTask<int> sync_wait_chain(int levels) {
    if (levels == 0) co_return 0;
    co_return 1 + sync_wait(pool_, sync_wait_chain(levels - 1));
  }
  void op_sync_wait_chain(Rng& r) {
    const int levels = static_cast<int>(kMaxHelpDepth) + 1 + static_cast<int>(r.below(32));
    if (sync_wait(pool_, sync_wait_chain(levels)) != levels) fail("a sync_wait chain lost a level");
    count_check();
  }

  // The errors the reference documents, each where it must be thrown.
  void op_misuse(bool in_task) {
    expect_throw<std::invalid_argument>([&] { pool_.submit(Task{}); }, "submit() of an empty Task");
    expect_throw<std::invalid_argument>([&] { (void)async(pool_, std::function<int()>{}); },
                                        "async() of an empty callable");
    expect_throw<std::logic_error>([] { Future<int>().get(); }, "get() on an empty future");
    expect_throw<std::logic_error>([] { (void)Future<int>().then([](int x) { return x; }); },
                                   "then() on an empty future");
    expect_throw<std::invalid_argument>([] { (void)when_any(std::vector<Future<int>>{}); },
                                        "when_any() of no futures");
    expect_throw<std::logic_error>([&] { (void)sync_wait(pool_, CoTask<int>{}); },
                                   "sync_wait() of an empty CoTask");
    expect_throw<std::invalid_argument>([] { (void)first_ready(std::vector<Future<int>>{}); },
                                        "first_ready() of no futures");
    expect_throw<std::out_of_range>([&] { parallel_for(pool_, -1, std::size_t{4}, [](auto) {}); },
                                    "parallel_for() of an unsigned range from a negative begin");
    if (tp_ != nullptr) {
      expect_throw<std::invalid_argument>([&] { tp_->spawn(std::function<void()>{}); },
                                          "spawn() of an empty callable");
    }
    if (in_task) {
      expect_throw<std::logic_error>([&] { pool_.wait_idle(); },
                                     "wait_idle() inside a task, whichever thread runs it");
      if (tp_ != nullptr) {
        expect_throw<std::logic_error>([&] { tp_->wait_all(); }, "wait_all() inside a task");
      }
    }
    count_check();
  }

  IThreadPool& pool_;
  ThreadPool* tp_;
  // TaskGroup() and join(a, b) find a stage-5 scheduler from inside any of its tasks, whichever
  // thread runs it (docs/reference.md); on other pools the program always names the pool.
  const bool finds_pool_ = sched::fork_join_host(pool_) != nullptr;
  const std::uint64_t seed_;
  const Limits limits_;
  WorkLedger ledger_;
  std::atomic<std::size_t> spawned_thrown_{0};
  std::atomic<std::size_t> checks_{0};
};

}  // namespace wslab::fuzz
