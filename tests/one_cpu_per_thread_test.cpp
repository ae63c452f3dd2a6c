// "N threads" means N CPUs on every pool: a one-thread pool's parallel_for, launched the way the
// Mandelbrot demo launches it (demo::run_on_pool: as one task of the pool, the caller asleep),
// keeps one CPU busy, whichever registered pool or lab variant runs it. Two measures:
//   - the process's CPU time over the wall time of the call: about 1 with one thread computing,
//     about 2 on a two-core machine when the calling thread computes beside the worker (what a
//     plain outside call of parallel_for does on stages 1-4, whose fork-join path lets the
//     waiting caller help). A busy machine only lowers it: the wall time stretches, the CPU time
//     does not, so another process that takes most of a core can hide an extra thread;
//   - how many calls of the body are running at once, at most: exactly 1 with one thread
//     computing, whatever the load (a preempted thread stays inside its call of the body).
#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.hpp"
#include "registry/pool_choice.hpp"
#include "registry/pools.hpp"
#include "stage5_parallel_algos/algorithms/parallel_for.hpp"
#include "stage5_parallel_algos/tests/seat_guest.hpp"
#include "stage5_parallel_algos/threadpool.hpp"

namespace {

// A CPU-bound element: a dependent chain of multiply-adds, no memory traffic.
double burn(std::size_t i, int steps) {
  double x = static_cast<double>(i);
  for (int k = 0; k < steps; ++k)
    x = x * 0.999999 + 1e-7;
  return x;
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr int kSteps = 20'000;  // per element: tens of microseconds

// Elements for about `seconds` of work on one CPU, timed on this thread.
std::size_t elements_for(double seconds) {
  constexpr std::size_t kProbe = 64;
  std::vector<double> out(kProbe);
  const double start = wall_seconds();
  for (std::size_t i = 0; i < kProbe; ++i)
    out[i] = burn(i, kSteps);
  const double per_element = (wall_seconds() - start) / kProbe;
  EXPECT_GT(out[kProbe - 1], 0.0);
  return static_cast<std::size_t>(seconds / per_element) + 1;
}

std::vector<std::string> every_pool() {
  std::vector<std::string> names;
  for (std::string_view n : wslab::pool_names())
    names.emplace_back(n);
  for (std::string_view n : wslab::variant_names())
    names.emplace_back(n);
  return names;
}

// About 150 ms of work per pool on one CPU (less under a sanitizer, whose CPU-time overhead is
// the same on every thread and leaves the ratio alone), on a fresh pool.
TEST(OneCpuPerThread, OneThreadPoolParallelForUsesOneCpu) {
  const std::size_t n = elements_for(wslab::kSanitized ? 0.05 : 0.15);
  std::vector<double> out(n);
  for (const std::string& name : every_pool()) {
    auto pool = wslab::make_pool(name, 1);
    std::atomic<int> running{0}, most_running{0};
    const double cpu0 = process_cpu_seconds();
    const double wall0 = wall_seconds();
    wslab::demo::run_on_pool(*pool, [&] {
      wslab::parallel_for(*pool, std::size_t{0}, n, [&](std::size_t i) {
        const int now = running.fetch_add(1) + 1;
        int seen = most_running.load();
        while (now > seen && !most_running.compare_exchange_weak(seen, now)) {
        }
        out[i] = burn(i, kSteps);
        running.fetch_sub(1);
      });
    });
    const double wall = wall_seconds() - wall0;
    const double cpu = process_cpu_seconds() - cpu0;
    EXPECT_EQ(most_running.load(), 1) << name << ": calls of the body at once, with one thread";
    EXPECT_LT(cpu / wall, 1.5) << name << ": " << cpu * 1e3 << " ms of CPU in " << wall * 1e3
                               << " ms, with one thread";
    for (std::size_t i = 0; i < n; i += n / 7 + 1)
      ASSERT_EQ(out[i], burn(i, kSteps)) << name << ", element " << i;
  }
}

// Called from main() directly, back to back, on the library's ThreadPool of one worker: a join
// recursion, a TaskGroup, parallel_for and parallel_transform_reduce each keep one CPU busy, as
// docs/reference.md says (an outside join or algorithm sits on the guest seat only in a sleeping
// worker's place, or hands itself to the workers and sleeps; an outside TaskGroup waiter sleeps
// while the workers run its callables). Both measures of the test above: a caller computing
// beside the worker puts the CPU ratio near 2 on two idle cores, and runs calls of the body
// beside the worker's whatever the load (a scheduler that let it did so in 20-50 % of the calls).
// Each call starts with the worker asleep: a worker still on its way to park after the previous
// call looks busy, and an outside caller takes work back from a pool whose every worker looks
// busy, so a loaded machine that preempts the worker there would let the caller compute beside
// it. The wait is not measured (the calling thread polls meanwhile). A few calls beside another
// are allowed: a TaskGroup waiter runs a callable itself when the worker, preempted between two,
// has started none for a millisecond.
TEST(OneCpuPerThread, OutsideCallsOnAOneWorkerThreadPoolUseOneCpu) {
  constexpr int kCalls = 30;
  constexpr std::size_t kLeaf = 8;
  const std::size_t n = elements_for((wslab::kSanitized ? 0.05 : 0.15) / kCalls) + 4 * kLeaf;
  wslab::ThreadPool pool(1);
  auto& scheduler = static_cast<wslab::ThreadPool::SchedulerType&>(pool.scheduler());
  std::vector<double> out(n);
  std::atomic<int> running{0}, most_running{0};
  std::atomic<std::size_t> calls{0}, beside_another{0};
  auto body = [&](std::size_t i) {
    const int now = running.fetch_add(1) + 1;
    calls.fetch_add(1);
    if (now > 1) beside_another.fetch_add(1);
    int seen = most_running.load();
    while (now > seen && !most_running.compare_exchange_weak(seen, now)) {
    }
    // The four-callable group below computes an element more than once, and a call beside
    // another (the few the test allows) may then write the same element: an atomic store keeps
    // that a measured overlap, not a data race.
    const double value = burn(i, kSteps);
    std::atomic_ref<double>(out[i]).store(value, std::memory_order_relaxed);
    running.fetch_sub(1);
    return value;
  };
  // Halves by join down to kLeaf elements.
  auto by_join = [&](auto& self, std::size_t lo, std::size_t hi) -> void {
    if (hi - lo <= kLeaf) {
      for (std::size_t i = lo; i < hi; ++i)
        body(i);
      return;
    }
    const std::size_t mid = lo + (hi - lo) / 2;
    pool.join([&] { self(self, lo, mid); }, [&] { self(self, mid, hi); });
  };
  struct Api {
    const char* name;
    std::function<void()> call;
  };
  const std::vector<Api> apis = {
      {"join", [&] { by_join(by_join, 0, n); }},
      {"TaskGroup",
       [&] {
         wslab::TaskGroup group(pool);
         for (std::size_t lo = 0; lo < n; lo += kLeaf) {
           group.run([&, lo] {
             for (std::size_t i = lo; i < std::min(n, lo + kLeaf); ++i)
               body(i);
           });
         }
         group.wait();
       }},
      {"TaskGroup of four callables of a few milliseconds",  // longer than the waiter's grace
       [&] {
         wslab::TaskGroup group(pool);
         for (std::size_t part = 0; part < 4; ++part) {
           group.run([&, part] {
             for (std::size_t i = part; i < n; ++i)  // nearly all of the range, each
               body(i);
           });
         }
         group.wait();
       }},
      {"parallel_for",
       [&] { pool.parallel_for(std::size_t{0}, n, [&](std::size_t i) { body(i); }); }},
      {"parallel_transform_reduce",
       [&] {
         std::vector<std::size_t> index(n);
         for (std::size_t i = 0; i < n; ++i)
           index[i] = i;
         (void)pool.parallel_transform_reduce(index, 0.0, std::plus<>{}, body);
       }},
  };
  for (const Api& api : apis) {
    most_running = 0;
    calls = 0;
    beside_another = 0;
    double cpu = 0;
    double wall = 0;
    const wslab::WorkerStats before = scheduler.stats().total();
    for (int c = 0; c < kCalls; ++c) {
      wslab::test::wait_until_a_worker_sleeps(scheduler);
      const double cpu0 = process_cpu_seconds();
      const double wall0 = wall_seconds();
      api.call();
      wall += wall_seconds() - wall0;
      cpu += process_cpu_seconds() - cpu0;
    }
    // What the worker did meanwhile says which path let it compute beside the caller: steals
    // (from the guest seat: a lent worker awake), or jobs from the injector (a join handed over).
    const wslab::WorkerStats after = scheduler.stats().total();
    EXPECT_LT(beside_another.load(), calls.load() / 20)
        << api.name << " from outside: calls of the body that began beside another, of "
        << calls.load() << "; the worker ran " << after.tasks_executed - before.tasks_executed
        << " jobs, " << after.steals - before.steals << " stolen and "
        << after.global_pops - before.global_pops << " from the injector, and parked "
        << after.parks - before.parks << " times";
    EXPECT_LT(cpu / wall, 1.3) << api.name << " from outside: " << cpu * 1e3 << " ms of CPU in "
                               << wall * 1e3 << " ms, " << kCalls
                               << " calls on one worker (at most " << most_running.load()
                               << " calls of the body at once)";
    for (std::size_t i = 0; i < n; i += n / 7 + 1)
      ASSERT_EQ(out[i], burn(i, kSteps)) << api.name << ", element " << i;
  }
}

}  // namespace
