// What a second worker costs the first on rounds of tiny tasks, with CPUs of different speeds
// taken out: every worker is pinned to a CPU, and each two-worker time is divided by the
// one-worker time on the CPU where the round's root ran.
//
//   second_worker_cost [--reps N]
//
// A repetition is one root task that runs 1,000 rounds of a TaskGroup of 1,000 empty callables
// (the spawn-many pattern; the root's worker runs nearly all of them), timed inside the root from
// its first round to its last. The pools, each repetition of each in turn:
//   - one worker, pinned to the first CPU, and one pinned to the second: the reference on each;
//   - two workers, one per CPU, as built (`pausing`): the second steals a few callables, finds
//     them tiny and pauses on its victim (stage5_parallel_algos/README.md, steps 16, 21, 30),
//     coming back to steal when a pause ends;
//   - the same without step 16 (`no tiny steals`: SchedulerKnobs::tiny_steal_ns = 0): the second
//     worker steals whatever it finds, as soon as it finds it;
//   - two workers, the second blocked in a task that sleeps 20 us at a time (`blocked`), as short
//     as a pause's shortest nap: it wakes as often, and touches nothing of the first worker's.
// A repetition whose root moved between CPUs is dropped. Prints, per CPU, the one-worker median
// and each two-worker median over it, then each two-worker pool's median over both CPUs of its
// repetitions' ratios to the one-worker median on their CPU. A CPU whose speed changes during the
// run (cpu_speeds) moves its reference too: compare runs made while the CPUs keep their speeds.
// Exits 0, and 2 on bad arguments; with fewer than two CPUs, or CPUs it may not pin threads to,
// it says so and measures nothing.
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "cpu_pinning.hpp"
#include "harness/bench/statistics.hpp"
#include "stage5_parallel_algos/threadpool.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRounds = 1000;
constexpr int kCallables = 1000;
constexpr auto kBlockedNap = std::chrono::microseconds(20);

// Pins the pool's workers one per CPU of `cpus`: one task per worker, each pinning the thread it
// runs on, held at a barrier until all have started, so that no worker runs two of them. False
// when the system refused one.
bool pin_workers(wslab::Scheduler& pool, const std::vector<int>& cpus) {
  std::barrier all_started(static_cast<std::ptrdiff_t>(cpus.size()));
  std::atomic<std::size_t> next{0};
  std::atomic<bool> pinned{true};
  for (std::size_t i = 0; i < cpus.size(); ++i) {
    pool.submit([&] {
      if (!wslab::bench::pin(pthread_self(), cpus[next.fetch_add(1)])) pinned = false;
      all_started.arrive_and_wait();
    });
  }
  pool.wait_idle();
  return pinned;
}

struct Repetition {
  int cpu = -1;  // where the root ran, -1 if it moved
  double ms = 0;
};

// One repetition on `pool`; with `block_second`, a task first occupies the other worker, asleep
// in naps until the root is done.
Repetition run_once(wslab::Scheduler& pool, bool block_second) {
  std::atomic<int> phase{0};  // 1: the blocker runs; 2: the root is done
  if (block_second) {
    pool.submit([&] {
      phase.store(1);
      while (phase.load() != 2)
        std::this_thread::sleep_for(kBlockedNap);
    });
    while (phase.load() != 1)
      std::this_thread::yield();
  }
  Repetition r;
  pool.submit([&] {
    const int cpu = sched_getcpu();
    const Clock::time_point start = Clock::now();
    for (int k = 0; k < kRounds; ++k) {
      wslab::TaskGroup group(pool);
      for (int i = 0; i < kCallables; ++i)
        group.run([] { asm volatile("" ::: "memory"); });
      group.wait();
    }
    r.ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    r.cpu = sched_getcpu() == cpu ? cpu : -1;
    phase.store(2);
  });
  pool.wait_idle();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 15;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: second_worker_cost [--reps N]\n");
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  const std::vector<int> cpus = wslab::bench::allowed_cpus(2);
  if (cpus.size() < 2) {
    std::printf("second_worker_cost: needs two CPUs; nothing measured\n");
    return 0;
  }
  wslab::SchedulerKnobs no_tiny_steals;
  no_tiny_steals.tiny_steal_ns = 0;

  struct Pool {
    const char* name;
    std::unique_ptr<wslab::Scheduler> pool;
    bool block_second;
    std::vector<double> ms[2];  // by the index in `cpus` of the root's CPU
  };
  std::vector<Pool> pools;
  bool pinned = true;
  auto add = [&](const char* name, std::size_t workers, wslab::SchedulerKnobs knobs,
                 std::vector<int> on, bool block_second) {
    pools.push_back({name,
                     std::make_unique<wslab::Scheduler>(workers, wslab::PoolOptions{}, knobs),
                     block_second,
                     {}});
    pinned = pin_workers(*pools.back().pool, on) && pinned;
  };
  add("one worker", 1, {}, {cpus[0]}, false);
  add("one worker", 1, {}, {cpus[1]}, false);
  add("pausing", 2, {}, cpus, false);
  add("no tiny steals", 2, no_tiny_steals, cpus, false);
  add("blocked", 2, {}, cpus, true);
  if (!pinned) {
    std::printf("second_worker_cost: the system refused to pin a worker; nothing measured\n");
    return 0;
  }

  for (int r = -2; r < reps; ++r) {  // two warm-ups
    for (Pool& p : pools) {
      const Repetition x = run_once(*p.pool, p.block_second);
      if (r < 0 || x.cpu < 0) continue;
      if (x.cpu == cpus[0]) p.ms[0].push_back(x.ms);
      if (x.cpu == cpus[1]) p.ms[1].push_back(x.ms);
    }
  }
  std::printf(
      "second_worker_cost: %d rounds of a TaskGroup of %d empty callables per repetition, "
      "%d repetitions of each pool in turn; two-worker medians over the one-worker median "
      "on the root's CPU (repetitions there)\n",
      kRounds, kCallables, reps);
  // The one-worker pools are pinned, so each has every repetition on its own CPU.
  double one[2];
  for (int c = 0; c < 2; ++c) {
    one[c] = wslab::bench::summarize(pools[std::size_t(c)].ms[c]).median;
    std::printf("root on CPU %d: one worker %.3f ms", cpus[std::size_t(c)], one[c]);
    for (std::size_t p = 2; p < pools.size(); ++p) {
      const std::vector<double>& v = pools[p].ms[c];
      if (v.empty())
        std::printf(", %s -", pools[p].name);
      else
        std::printf(", %s %.3f (%zu)", pools[p].name, wslab::bench::summarize(v).median / one[c],
                    v.size());
    }
    std::printf("\n");
  }
  // Every repetition over the one-worker median on its root's CPU, pooled over both CPUs.
  std::printf("both CPUs:");
  for (std::size_t p = 2; p < pools.size(); ++p) {
    std::vector<double> ratios;
    for (int c = 0; c < 2; ++c)
      for (const double ms : pools[p].ms[c])
        ratios.push_back(ms / one[c]);
    if (ratios.empty())
      std::printf("%s %s -", p == 2 ? "" : ",", pools[p].name);
    else
      std::printf("%s %s %.3f", p == 2 ? "" : ",", pools[p].name,
                  wslab::bench::summarize(ratios).median);
  }
  std::printf("\n");
  return 0;
}
