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
#include <string>
#include <string_view>
#include <vector>

#include "common/config.hpp"
#include "registry/pool_choice.hpp"
#include "registry/pools.hpp"
#include "stage5_parallel_algos/algorithms/parallel_for.hpp"

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

}  // namespace
