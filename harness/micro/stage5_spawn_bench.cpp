// Spawn many, then wait: the pattern every fork-join user writes, timed per task, beside oneTBB's
// task_group in the same run. Every cell is "rounds x n": a spawner running on the pool makes n
// tasks with empty bodies and waits for them, `rounds` times, on a pool of `threads` threads.
//
//   wslab_task_group  a task runs TaskGroup g(pool); g.run(empty) n times; g.wait()
//   wslab_task_group_on_heap
//                     the same with the group made by std::make_unique (oneTBB's task_group is
//                     often held so), waited for on the thread that made it
//   wslab_spawn       a task spawns n empty tasks (its worker's own deque); the caller's
//                     wait_all() waits for them (wait_all is for threads outside the pool)
//   wslab_external    the caller (not a pool thread) spawns n tasks, then wait_all()
//   tbb_task_group    inside task_arena(threads).execute: tbb::task_group, run n times, wait
// Thread counts mean the same CPUs for both libraries, but for wslab's caller, which polls in
// wait_all() for about as long as an idle worker searches before it sleeps (README.md, steps 9 to
// 11), unless its last polls ran out (step 19): in rounds that end within the poll it keeps part
// of a CPU busy. TBB's caller is one of the arena's `threads` slots. The step_spawn rows report
// `cpus`, the process's CPU time over the wall time, and so do the step_task_group rows.
// wslab_task_group, wslab_spawn and step_task_group also report `stolen`: the share of their tasks
// a worker stole; step_task_group also `first_stolen`, the same for its untimed first run.
// The spawn-many rows count the tasks of their untimed first run as they run; the task-group,
// spawn and external rows, and their step rows, also count those of their timed runs, by the
// pool's count of the tasks it ran: a row whose scheduler lost or doubled a task aborts instead of
// reporting a time.
//
// The stage-5 steps these rows measure (README.md), each the wslab_task_group pattern on a
// scheduler with one of them undone, beside the full scheduler in the same process:
//   step_task_group/full             the production scheduler (wslab::Scheduler, knobs default)
//   step_task_group/generic_group    the group's generic path (claimable jobs in a list under a
//                                    mutex), through a pass-through IThreadPool
//   step_task_group/no_node_depot    SchedulerKnobs::node_depot = false
//   step_task_group/no_steal_batch   SchedulerKnobs::steal_batch = 1
//   step_task_group/no_tiny_steals   SchedulerKnobs::tiny_steal_ns = 0
//   step_task_group/fixed_tiny_pause SchedulerKnobs::tiny_steal_doublings = 0
//   step_task_group/forgetful_pauses SchedulerKnobs::remembered_pauses = false
//   step_task_group/idle_ends_pauses SchedulerKnobs::pause_through_idle = false
//   step_task_group/no_growing_owners SchedulerKnobs::growing_owners = false
//   step_task_group/no_group_jobs    SchedulerKnobs::group_jobs = false
//   step_task_group/no_small_group_jobs SchedulerKnobs::small_group_jobs = false
//   step_task_group/no_group_frames  SchedulerKnobs::group_frames = false
//   step_task_group/no_frame_runs    SchedulerKnobs::frame_runs = false
//   step_task_group/no_frames_given_back SchedulerKnobs::give_back_frames = false, and
//                                    group_frames_capacity = 65,536 (the cap before that step)
//   step_task_group/no_look_first    SchedulerKnobs::look_first = false
//   step_spawn/full, step_spawn/no_look_first, step_spawn/no_adaptive_wait,
//   step_spawn/forgetful_pauses, step_spawn/idle_ends_pauses, step_spawn/no_prepaid_admissions
//                                    the wslab_spawn pattern on the scheduler, with each step
//                                    and without it, on the cells above and on rounds of 10
//                                    tasks (100,000 x 10), which end within the caller's poll
//   step_co_join/full, step_co_join/untimed_forks
//                                    the wslab_co_join pattern on the scheduler, with and without
//                                    SchedulerKnobs::time_stolen_forks; also `cpus` and `stolen`
//
// wslab_co_join: the task group's rounds as coroutines, co_await co_join(vector of n CoTasks).
//
// fib_join_vs_call: fib(30) by pool.join at 1 and 2 threads; its counter `fork_per_step` is the
// time per fork divided by the time per step of the same fib computed sequentially, the figure to
// compare across machines. A step is a call with n >= 2, and its time includes its leaves' calls:
// both programs' times over the same count, so `fork_per_step` is how many times as long the
// forking program takes as the sequential one (1: the forks cost nothing; on two threads, below 1
// is a speed-up). Every iteration times the sequential fib and then the forking one, back to back
// on the thread that runs the forking program's root (FibPair), and the reported time is the
// forking program's alone.
// fib_worker_ref_vs_call: the same fib by WorkerRef::join, the handle passed down the recursion.
// step_fib_worker_ref/full, step_fib_worker_ref/no_frames_in_slots: the same on a scheduler with
// its default knobs and with SchedulerKnobs::frames_in_slots = false (b's frame in the joining
// stack), beside each other in one process.
// fib_co_join_vs_call: the same fib as a CoTask, forking by co_await co_join(...), started with
// pool.run().
//
//   stage5_spawn_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "harness/bench/cpu_time.hpp"
#include "stage5_parallel_algos/fork_join/task_group.hpp"
#include "stage5_parallel_algos/threadpool.hpp"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "stage5_spawn_bench: wrong count in %s\n", what);
    std::abort();
  }
}

struct Cell {
  std::size_t threads;
  std::int64_t rounds;
  std::int64_t n;
};

Cell cell_of(const benchmark::State& state) {
  return {std::size_t(state.range(0)), state.range(1), state.range(2)};
}

void report(benchmark::State& state, const Cell& c) {
  state.counters["s_per_task"] =
      benchmark::Counter(double(c.rounds * c.n), benchmark::Counter::kIsIterationInvariantRate |
                                                     benchmark::Counter::kInvert);
}

// CPUs busy: the process's CPU time (every thread's, the caller's too) over the wall time of the
// timed loop. Google Benchmark's own CPU column counts the calling thread only.
class CpusBusy {
 public:
  CpusBusy()
      : cpu0_(wslab::bench::process_cpu_seconds()), wall0_(std::chrono::steady_clock::now()) {}
  void report(benchmark::State& state) const {
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0_).count();
    state.counters["cpus"] = (wslab::bench::process_cpu_seconds() - cpu0_) / wall;
  }

 private:
  double cpu0_;
  std::chrono::steady_clock::time_point wall0_;
};

// The share of the timed tasks that a worker stole (steals over tasks, from the pool's counters):
// on two threads it says whether the second worker shared the work or only fought over it.
void report_stolen(benchmark::State& state, const Cell& c, const wslab::PoolStats& before,
                   const wslab::PoolStats& after) {
  const double tasks = double(state.iterations()) * double(c.rounds * c.n);
  state.counters["stolen"] = double(after.total().steals - before.total().steals) / tasks;
}

// The timed runs' tasks are empty and count nothing themselves, so the pool's own count of the
// tasks it ran, wherever they ran, must come to every task the timed runs made (`per_iteration`
// per iteration): a scheduler that lost or doubled tasks is refused, not timed as a fast one. A
// thief counts a task it stole just after running it, so the count may land after the wait has
// returned: the check waits for it, and fails at once if it goes past.
void check_timed_tasks(const benchmark::State& state, wslab::IThreadPool& pool,
                       const wslab::PoolStats& before, std::int64_t per_iteration,
                       const char* what) {
  const std::uint64_t expected = std::uint64_t(state.iterations()) * std::uint64_t(per_iteration);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    const std::uint64_t ran = pool.stats().tasks_executed() - before.tasks_executed();
    if (ran == expected) return;
    if (ran > expected || std::chrono::steady_clock::now() > give_up) {
      std::fprintf(stderr, "stage5_spawn_bench: %s ran %llu tasks in its timed runs, not %llu\n",
                   what, static_cast<unsigned long long>(ran),
                   static_cast<unsigned long long>(expected));
      std::abort();
    }
    std::this_thread::yield();
  }
}

// Body is the task's body: the untimed first run counts, the timed ones are empty (their tasks are
// counted by the pool: check_timed_tasks()).
enum class GroupIn { stack, heap };
template <GroupIn In = GroupIn::stack, class Body>
void group_rounds(wslab::ThreadPool& pool, const Cell& c, Body body) {
  auto round = [&](wslab::TaskGroup& g) {
    for (std::int64_t i = 0; i < c.n; ++i)
      g.run(body);
    g.wait();
  };
  for (std::int64_t r = 0; r < c.rounds; ++r) {
    if constexpr (In == GroupIn::heap) {
      round(*std::make_unique<wslab::TaskGroup>(pool.scheduler()));
    } else {
      wslab::TaskGroup g(pool.scheduler());
      round(g);
    }
  }
}

template <GroupIn In>
void wslab_task_group(benchmark::State& state) {
  const Cell c = cell_of(state);
  wslab::ThreadPool pool(c.threads);
  std::atomic<std::int64_t> ran{0};
  pool.spawn(
      [&] { group_rounds<In>(pool, c, [&ran] { ran.fetch_add(1, std::memory_order_relaxed); }); });
  pool.wait_all();
  check(ran.load() == c.rounds * c.n, "wslab_task_group");
  const wslab::PoolStats before = pool.scheduler().stats();
  for (auto _ : state) {
    pool.spawn([&] { group_rounds<In>(pool, c, [] {}); });
    pool.wait_all();
  }
  report(state, c);
  report_stolen(state, c, before, pool.scheduler().stats());
  check_timed_tasks(state, pool.scheduler(), before, 1 + c.rounds * c.n, "wslab_task_group");
}

// The same rounds as coroutines: each round co_joins n CoTasks, the first run inline, the rest
// queued as tasks. ran counts the children in the untimed first run, nullptr after.
wslab::CoTask<void> co_child(std::atomic<std::int64_t>* ran) {
  if (ran != nullptr) ran->fetch_add(1, std::memory_order_relaxed);
  co_return;
}

wslab::CoTask<void> co_rounds(wslab::IThreadPool& pool, Cell c, std::atomic<std::int64_t>* ran) {
  for (std::int64_t r = 0; r < c.rounds; ++r) {
    std::vector<wslab::CoTask<void>> children;
    children.reserve(std::size_t(c.n));
    for (std::int64_t i = 0; i < c.n; ++i)
      children.push_back(co_child(ran));
    co_await wslab::co_join(pool, std::move(children));
  }
}

void wslab_co_join(benchmark::State& state) {
  const Cell c = cell_of(state);
  wslab::ThreadPool pool(c.threads);
  std::atomic<std::int64_t> ran{0};
  pool.run(co_rounds(pool.scheduler(), c, &ran));
  check(ran.load() == c.rounds * c.n, "wslab_co_join");
  for (auto _ : state)
    pool.run(co_rounds(pool.scheduler(), c, nullptr));
  report(state, c);
}

// Forwards everything to a scheduler, but is not one: a TaskGroup on it takes its generic path.
class PassThrough final : public wslab::IThreadPool {
 public:
  explicit PassThrough(wslab::Scheduler& s) : s_(s) {}
  void submit(wslab::Task task) override { s_.submit(std::move(task)); }
  void wait_idle() override { s_.wait_idle(); }
  bool try_run_one() override { return s_.try_run_one(); }
  std::size_t thread_count() const noexcept override { return s_.thread_count(); }
  std::string_view name() const noexcept override { return "pass-through"; }
  wslab::PoolStats stats() const override { return s_.stats(); }
  bool owns_current_thread() const noexcept override { return s_.owns_current_thread(); }

 private:
  wslab::Scheduler& s_;
};

enum class StepVariant {
  kFull,
  kGenericGroup,
  kNoNodeDepot,
  kNoStealBatch,
  kNoTinySteals,
  kFixedTinyPause,
  kForgetfulPauses,
  kIdleEndsPauses,
  kUntimedForks,
  kNoGrowingOwners,
  kNoGroupJobs,
  kNoSmallGroupJobs,
  kNoGroupFrames,
  kNoFrameRuns,
  kNoFramesGivenBack,
  kNoLookFirst,
  kNoAdaptiveWait,
  kNoFramesInSlots,
  kNoPrepaidAdmissions
};

wslab::SchedulerKnobs knobs_of(StepVariant variant) {
  wslab::SchedulerKnobs knobs;
  if (variant == StepVariant::kNoNodeDepot) knobs.node_depot = false;
  if (variant == StepVariant::kNoStealBatch) knobs.steal_batch = 1;
  if (variant == StepVariant::kNoTinySteals) knobs.tiny_steal_ns = 0;
  if (variant == StepVariant::kFixedTinyPause) knobs.tiny_steal_doublings = 0;
  if (variant == StepVariant::kForgetfulPauses) knobs.remembered_pauses = false;
  if (variant == StepVariant::kIdleEndsPauses) knobs.pause_through_idle = false;
  if (variant == StepVariant::kUntimedForks) knobs.time_stolen_forks = false;
  if (variant == StepVariant::kNoGrowingOwners) knobs.growing_owners = false;
  if (variant == StepVariant::kNoGroupJobs) knobs.group_jobs = false;
  if (variant == StepVariant::kNoSmallGroupJobs) knobs.small_group_jobs = false;
  if (variant == StepVariant::kNoGroupFrames) knobs.group_frames = false;
  if (variant == StepVariant::kNoFrameRuns) knobs.frame_runs = false;
  if (variant == StepVariant::kNoFramesGivenBack) {
    knobs.give_back_frames = false;
    knobs.group_frames_capacity = 65536;
  }
  if (variant == StepVariant::kNoLookFirst) knobs.look_first = false;
  if (variant == StepVariant::kNoAdaptiveWait) knobs.adaptive_wait = false;
  if (variant == StepVariant::kNoFramesInSlots) knobs.frames_in_slots = false;
  if (variant == StepVariant::kNoPrepaidAdmissions) knobs.admission_batch = 1;
  return knobs;
}

void step_task_group(benchmark::State& state, StepVariant variant) {
  const Cell c = cell_of(state);
  wslab::Scheduler scheduler(c.threads, {}, knobs_of(variant));
  PassThrough pass(scheduler);
  wslab::IThreadPool& target =
      variant == StepVariant::kGenericGroup ? static_cast<wslab::IThreadPool&>(pass) : scheduler;
  auto rounds = [&](auto body) {
    for (std::int64_t r = 0; r < c.rounds; ++r) {
      wslab::TaskGroup g(target);
      for (std::int64_t i = 0; i < c.n; ++i)
        g.run(body);
      g.wait();
    }
  };
  std::atomic<std::int64_t> ran{0};
  const wslab::PoolStats fresh = scheduler.stats();
  scheduler.spawn([&] { rounds([&ran] { ran.fetch_add(1, std::memory_order_relaxed); }); });
  scheduler.wait_idle();
  check(ran.load() == c.rounds * c.n, "step_task_group");
  const wslab::PoolStats before = scheduler.stats();
  // The untimed first run, on a fresh pool whose deques grow to the round's size: the share of its
  // tasks a worker stole (step 'Growing owners').
  state.counters["first_stolen"] =
      double(before.total().steals - fresh.total().steals) / double(c.rounds * c.n);
  const CpusBusy cpus;
  for (auto _ : state) {
    scheduler.spawn([&] { rounds([] {}); });
    scheduler.wait_idle();
  }
  report(state, c);
  cpus.report(state);
  report_stolen(state, c, before, scheduler.stats());
  check_timed_tasks(state, scheduler, before, 1 + c.rounds * c.n, "step_task_group");
}

template <class Pool, class Body>
void spawn_n(Pool& pool, std::int64_t n, Body body) {
  for (std::int64_t i = 0; i < n; ++i)
    pool.spawn(body);
}

// The wslab_spawn pattern on a scheduler with one step undone.
void step_spawn(benchmark::State& state, StepVariant variant) {
  const Cell c = cell_of(state);
  wslab::Scheduler scheduler(c.threads, {}, knobs_of(variant));
  std::atomic<std::int64_t> ran{0};
  scheduler.spawn(
      [&] { spawn_n(scheduler, c.n, [&ran] { ran.fetch_add(1, std::memory_order_relaxed); }); });
  scheduler.wait_idle();
  check(ran.load() == c.n, "step_spawn");
  const wslab::PoolStats before = scheduler.stats();
  const CpusBusy cpus;
  for (auto _ : state) {
    for (std::int64_t r = 0; r < c.rounds; ++r) {
      scheduler.spawn([&] { spawn_n(scheduler, c.n, [] {}); });
      scheduler.wait_idle();
    }
  }
  report(state, c);
  cpus.report(state);
  check_timed_tasks(state, scheduler, before, c.rounds * (1 + c.n), "step_spawn");
}

void step_co_join(benchmark::State& state, StepVariant variant) {
  const Cell c = cell_of(state);
  wslab::Scheduler scheduler(c.threads, {}, knobs_of(variant));
  std::atomic<std::int64_t> ran{0};
  wslab::sync_wait(scheduler, co_rounds(scheduler, c, &ran));
  check(ran.load() == c.rounds * c.n, "step_co_join");
  const wslab::PoolStats before = scheduler.stats();
  const CpusBusy cpus;
  for (auto _ : state)
    wslab::sync_wait(scheduler, co_rounds(scheduler, c, nullptr));
  report(state, c);
  cpus.report(state);
  report_stolen(state, c, before, scheduler.stats());
}

void wslab_spawn(benchmark::State& state) {
  const Cell c = cell_of(state);
  wslab::ThreadPool pool(c.threads);
  std::atomic<std::int64_t> ran{0};
  for (std::int64_t r = 0; r < c.rounds; ++r) {
    pool.spawn(
        [&] { spawn_n(pool, c.n, [&ran] { ran.fetch_add(1, std::memory_order_relaxed); }); });
    pool.wait_all();
  }
  check(ran.load() == c.rounds * c.n, "wslab_spawn");
  const wslab::PoolStats before = pool.scheduler().stats();
  for (auto _ : state) {
    for (std::int64_t r = 0; r < c.rounds; ++r) {
      pool.spawn([&] { spawn_n(pool, c.n, [] {}); });
      pool.wait_all();
    }
  }
  report(state, c);
  report_stolen(state, c, before, pool.scheduler().stats());
  check_timed_tasks(state, pool.scheduler(), before, c.rounds * (1 + c.n), "wslab_spawn");
}

void wslab_external(benchmark::State& state) {
  const Cell c = cell_of(state);
  wslab::ThreadPool pool(c.threads);
  std::atomic<std::int64_t> ran{0};
  for (std::int64_t r = 0; r < c.rounds; ++r) {
    spawn_n(pool, c.n, [&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
    pool.wait_all();
  }
  check(ran.load() == c.rounds * c.n, "wslab_external");
  const wslab::PoolStats before = pool.scheduler().stats();
  for (auto _ : state) {
    for (std::int64_t r = 0; r < c.rounds; ++r) {
      spawn_n(pool, c.n, [] {});
      pool.wait_all();
    }
  }
  report(state, c);
  check_timed_tasks(state, pool.scheduler(), before, c.rounds * c.n, "wslab_external");
}

template <class Body>
void tbb_rounds(const Cell& c, Body body) {
  for (std::int64_t r = 0; r < c.rounds; ++r) {
    tbb::task_group g;
    for (std::int64_t i = 0; i < c.n; ++i)
      g.run(body);
    g.wait();
  }
}

void tbb_task_group(benchmark::State& state) {
  const Cell c = cell_of(state);
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, c.threads);
  tbb::task_arena arena(int(c.threads));
  std::atomic<std::int64_t> ran{0};
  arena.execute([&] { tbb_rounds(c, [&ran] { ran.fetch_add(1, std::memory_order_relaxed); }); });
  check(ran.load() == c.rounds * c.n, "tbb_task_group");
  for (auto _ : state)
    arena.execute([&] { tbb_rounds(c, [] {}); });
  report(state, c);
}

__attribute__((noinline)) std::uint64_t fib_plain(int n) {
  return n < 2 ? std::uint64_t(n) : fib_plain(n - 1) + fib_plain(n - 2);
}

std::uint64_t fib_ref(wslab::WorkerRef w, int n) {
  if (n < 2) return std::uint64_t(n);
  auto [x, y] = w.join([n](wslab::WorkerRef here) { return fib_ref(here, n - 1); },
                       [n](wslab::WorkerRef here) { return fib_ref(here, n - 2); });
  return x + y;
}

wslab::CoTask<std::uint64_t> fib_co(int n) {
  if (n < 2) co_return std::uint64_t(n);
  auto [x, y] = co_await wslab::co_join(fib_co(n - 1), fib_co(n - 2));
  co_return x + y;
}

// The halves capture n by value, as fib_ref's do: captured by reference, n stays in the frame's
// memory and every half reads it back through a pointer (bash scripts/fork_instructions.sh,
// join_ref_captures: about 13 instructions more per fork).
std::uint64_t fib_join(wslab::ThreadPool& pool, int n) {
  if (n < 2) return std::uint64_t(n);
  const auto parts = pool.join([&pool, n] { return fib_join(pool, n - 1); },
                               [&pool, n] { return fib_join(pool, n - 2); });
  return parts.first + parts.second;
}

constexpr int kFibN = 30;
constexpr std::uint64_t kFib30 = 832040;
// The forks of fib_join(n) are its calls with n >= 2, fib(n+1) - 1, as are the steps of
// fib_plain(n) (whose calls, leaves included, number 2 fib(n+1) - 1).
constexpr double kFib31 = 1346269;
constexpr double kForks = kFib31 - 1;

// One iteration of a fib row: the sequential fib(30) and then the forking one, timed back to back
// on the thread that runs the forking program's root, so that both run on the same CPU. The two
// CPUs of a virtual machine can differ in speed for minutes at a time (one host core shared with a
// busy neighbour: a sequential fib a third slower on one than on the other, measured with both
// pinned in turn), and a sequential fib timed on another thread than the root's, or before the
// loop, would carry that difference into the ratio. Pairing each forking run with its own
// sequential run also follows a host whose speed drifts during the benchmark.
struct FibPair {
  using Clock = std::chrono::steady_clock;
  double sequential = 0;  // seconds, summed over the iterations
  double forking = 0;
  Clock::time_point forking_starts;
  template <class Forking>
  std::uint64_t operator()(Forking&& forking_fib) {
    run_sequential();
    const std::uint64_t result = forking_fib();
    forking_done();
    return result;
  }
  // The two halves of operator(), for a root that cannot pass the forking fib as a callable (a
  // coroutine that co_awaits it).
  void run_sequential() {
    const Clock::time_point t0 = Clock::now();
    const std::uint64_t v = fib_plain(kFibN);
    const Clock::time_point t1 = Clock::now();
    check(v == kFib30, "fib_plain");
    sequential += std::chrono::duration<double>(t1 - t0).count();
    forking_starts = Clock::now();
  }
  void forking_done() {
    forking += std::chrono::duration<double>(Clock::now() - forking_starts).count();
  }
};

// Times fib(30) computed by run_fib(pair), which calls pair(forking fib) at the root, and reports
// it per fork and against one step of the sequential fib timed beside it. The benchmark's time is
// the forking program's (manual time), without the sequential run.
template <class RunFib>
void fib_vs_call(benchmark::State& state, RunFib run_fib, const char* what) {
  FibPair warm;
  check(run_fib(warm) == kFib30, what);
  FibPair pair;
  std::int64_t runs = 0;
  for (auto _ : state) {
    const double before = pair.forking;
    benchmark::DoNotOptimize(run_fib(pair));
    state.SetIterationTime(pair.forking - before);
    ++runs;
  }
  state.counters["s_per_fork"] = pair.forking / double(runs) / kForks;
  state.counters["s_per_step"] = pair.sequential / double(runs) / kForks;
  state.counters["fork_per_step"] = pair.forking / pair.sequential;
}

void fib_join_vs_call(benchmark::State& state) {
  wslab::ThreadPool pool(std::size_t(state.range(0)));
  // On a worker: spawned, and waited for from here.
  fib_vs_call(
      state,
      [&](FibPair& pair) {
        std::uint64_t result = 0;
        pool.spawn([&] { result = pair([&] { return fib_join(pool, kFibN); }); });
        pool.wait_all();
        return result;
      },
      "fib_join");
}

void fib_worker_ref_vs_call(benchmark::State& state) {
  wslab::ThreadPool pool(std::size_t(state.range(0)));
  // From here: with_worker() takes the guest seat when a worker sleeps, or hands each join to
  // the workers.
  fib_vs_call(
      state,
      [&](FibPair& pair) {
        return pool.with_worker(
            [&](wslab::WorkerRef w) { return pair([w] { return fib_ref(w, kFibN); }); });
      },
      "fib_ref");
}

void step_fib_worker_ref(benchmark::State& state, StepVariant variant) {
  wslab::Scheduler pool(std::size_t(state.range(0)), {}, knobs_of(variant));
  fib_vs_call(
      state,
      [&](FibPair& pair) {
        return wslab::with_worker(
            pool, [&](wslab::WorkerRef w) { return pair([w] { return fib_ref(w, kFibN); }); });
      },
      "step_fib_ref");
}

void fib_co_join_vs_call(benchmark::State& state) {
  wslab::ThreadPool pool(std::size_t(state.range(0)));
  // The root coroutine times both on the thread that starts it (the forking fib may end elsewhere).
  fib_vs_call(
      state,
      [&](FibPair& pair) {
        return pool.run([](FibPair& p) -> wslab::CoTask<std::uint64_t> {
          p.run_sequential();
          const std::uint64_t result = co_await fib_co(kFibN);
          p.forking_done();
          co_return result;
        }(pair));
      },
      "fib_co");
}

void cells(benchmark::internal::Benchmark* b) {
  for (std::int64_t threads : {1, 2}) {
    b->Args({threads, 1, 1'000'000});
    b->Args({threads, 1'000, 1'000});
  }
  b->ArgNames({"threads", "rounds", "n"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

// The same, and rounds short enough to end within wait_idle()'s poll.
void spawn_cells(benchmark::internal::Benchmark* b) {
  cells(b);
  for (std::int64_t threads : {1, 2})
    b->Args({threads, 100'000, 10});
}

// The fib rows: one and two threads, in milliseconds of wall time.
void fib_threads(benchmark::internal::Benchmark* b) {
  b->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseManualTime();
}

}  // namespace

BENCHMARK(wslab_task_group<GroupIn::stack>)->Name("wslab_task_group")->Apply(cells);
BENCHMARK(wslab_task_group<GroupIn::heap>)->Name("wslab_task_group_on_heap")->Apply(cells);
BENCHMARK(wslab_spawn)->Apply(cells);
BENCHMARK(wslab_co_join)->Apply(cells);
BENCHMARK(wslab_external)->Apply(cells);
BENCHMARK(tbb_task_group)->Apply(cells);
BENCHMARK_CAPTURE(step_task_group, full, StepVariant::kFull)->Apply(cells);
BENCHMARK_CAPTURE(step_task_group, generic_group, StepVariant::kGenericGroup)->Apply(cells);
BENCHMARK_CAPTURE(step_task_group, no_node_depot, StepVariant::kNoNodeDepot)->Apply(cells);
BENCHMARK_CAPTURE(step_task_group, no_steal_batch, StepVariant::kNoStealBatch)->Apply(cells);
BENCHMARK_CAPTURE(step_task_group, no_tiny_steals, StepVariant::kNoTinySteals)->Apply(cells);
BENCHMARK_CAPTURE(step_task_group, fixed_tiny_pause, StepVariant::kFixedTinyPause)->Apply(cells);
BENCHMARK_CAPTURE(step_task_group, forgetful_pauses, StepVariant::kForgetfulPauses)->Apply(cells);
BENCHMARK_CAPTURE(step_task_group, idle_ends_pauses, StepVariant::kIdleEndsPauses)->Apply(cells);
BENCHMARK_CAPTURE(step_task_group, no_group_jobs, StepVariant::kNoGroupJobs)->Apply(cells);
BENCHMARK_CAPTURE(step_task_group, no_look_first, StepVariant::kNoLookFirst)->Apply(cells);
BENCHMARK_CAPTURE(step_task_group, no_growing_owners, StepVariant::kNoGrowingOwners)->Apply(cells);
BENCHMARK_CAPTURE(step_task_group, no_small_group_jobs, StepVariant::kNoSmallGroupJobs)
    ->Apply(cells);
BENCHMARK_CAPTURE(step_task_group, no_group_frames, StepVariant::kNoGroupFrames)->Apply(cells);
BENCHMARK_CAPTURE(step_task_group, no_frame_runs, StepVariant::kNoFrameRuns)->Apply(cells);
BENCHMARK_CAPTURE(step_task_group, no_frames_given_back, StepVariant::kNoFramesGivenBack)
    ->Apply(cells);
BENCHMARK_CAPTURE(step_spawn, full, StepVariant::kFull)->Apply(spawn_cells);
BENCHMARK_CAPTURE(step_spawn, no_look_first, StepVariant::kNoLookFirst)->Apply(spawn_cells);
BENCHMARK_CAPTURE(step_spawn, no_adaptive_wait, StepVariant::kNoAdaptiveWait)->Apply(spawn_cells);
BENCHMARK_CAPTURE(step_spawn, forgetful_pauses, StepVariant::kForgetfulPauses)->Apply(spawn_cells);
BENCHMARK_CAPTURE(step_spawn, idle_ends_pauses, StepVariant::kIdleEndsPauses)->Apply(spawn_cells);
BENCHMARK_CAPTURE(step_spawn, no_prepaid_admissions, StepVariant::kNoPrepaidAdmissions)
    ->Apply(spawn_cells);
BENCHMARK_CAPTURE(step_co_join, full, StepVariant::kFull)->Apply(cells);
BENCHMARK_CAPTURE(step_co_join, untimed_forks, StepVariant::kUntimedForks)->Apply(cells);
BENCHMARK(fib_join_vs_call)->Apply(fib_threads);
BENCHMARK(fib_worker_ref_vs_call)->Apply(fib_threads);

BENCHMARK_CAPTURE(step_fib_worker_ref, full, StepVariant::kFull)->Apply(fib_threads);
BENCHMARK_CAPTURE(step_fib_worker_ref, no_frames_in_slots, StepVariant::kNoFramesInSlots)
    ->Apply(fib_threads);
BENCHMARK(fib_co_join_vs_call)->Apply(fib_threads);

BENCHMARK_MAIN();
