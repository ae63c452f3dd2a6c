// Micro-benchmarks of every registered pool (registry/pools.hpp), with Google Benchmark:
//   submit_outside  - an empty task submitted from a non-worker thread and run (time per task)
//   submit_inside   - an empty task submitted by a running task of the pool and run (time per task)
//   wakeup_latency  - a pool whose workers are all asleep: time from submit() to the task
//                     starting on a worker (manual time, one task per iteration)
// The pools are found at run time, so a newly registered pool is measured without edits here.
// Compare two runs with Google Benchmark's tool (Debian: libbenchmark-tools):
//   pool_micro --benchmark_out=a.json --benchmark_out_format=json
//   python3 /usr/share/benchmark/compare.py benchmarks a.json b.json
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "registry/pools.hpp"

namespace {

constexpr std::int64_t kBatch = 1024;  // tasks per timed batch: enough to amortise wait_idle()

void per_task_counter(benchmark::State& state) {
  state.SetItemsProcessed(state.iterations() * kBatch);
  // Seconds per task; the console shows it with an SI prefix, e.g. "95.2ns".
  state.counters["per_task"] = benchmark::Counter(
      static_cast<double>(kBatch),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void submit_outside(benchmark::State& state, std::string pool_name) {
  auto pool = wslab::make_pool(pool_name, static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    for (std::int64_t i = 0; i < kBatch; ++i)
      pool->submit([] {});
    pool->wait_idle();
  }
  per_task_counter(state);
}

void submit_inside(benchmark::State& state, std::string pool_name) {
  auto pool = wslab::make_pool(pool_name, static_cast<std::size_t>(state.range(0)));
  wslab::IThreadPool* const p = pool.get();
  for (auto _ : state) {
    p->submit([p] {
      for (std::int64_t i = 0; i < kBatch; ++i)
        p->submit([] {});
    });
    p->wait_idle();
  }
  per_task_counter(state);
}

void wakeup_latency(benchmark::State& state, std::string pool_name) {
  using clock = std::chrono::steady_clock;
  auto pool = wslab::make_pool(pool_name, static_cast<std::size_t>(state.range(0)));
  std::atomic<std::int64_t> started_ns{0};
  for (auto _ : state) {
    // Idle long enough for every worker to stop spinning and park (excluded from the time).
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const auto submitted = clock::now();
    pool->submit([&started_ns] {
      started_ns.store(clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    });
    pool->wait_idle();  // orders the store before this load
    const auto started =
        clock::time_point(clock::duration(started_ns.load(std::memory_order_relaxed)));
    state.SetIterationTime(std::chrono::duration<double>(started - submitted).count());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::int64_t> threads{1};
  if (hw > 1) threads.push_back(hw);
  // The stages, then the lab variants (select with --benchmark_filter, e.g.
  // 'wakeup_latency/stage4').
  std::vector<std::string_view> names = wslab::pool_names();
  for (std::string_view v : wslab::variant_names())
    names.push_back(v);
  for (std::string_view name : names) {
    const std::string n(name);
    for (std::int64_t t : threads) {
      benchmark::RegisterBenchmark(("submit_outside/" + n).c_str(), submit_outside, n)
          ->Arg(t)
          ->ArgName("threads")
          ->UseRealTime();
      benchmark::RegisterBenchmark(("submit_inside/" + n).c_str(), submit_inside, n)
          ->Arg(t)
          ->ArgName("threads")
          ->UseRealTime();
      benchmark::RegisterBenchmark(("wakeup_latency/" + n).c_str(), wakeup_latency, n)
          ->Arg(t)
          ->ArgName("threads")
          ->UseManualTime()
          ->Iterations(200)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
