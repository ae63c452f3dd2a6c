// What the trace hooks cost. This file is built twice: trace_overhead_bench_out with the hooks
// compiled out (WSLAB_TRACING=0) and trace_overhead_bench_in with them compiled in
// (WSLAB_TRACING=1) but no recorder running, so the two binaries differ only by the hooks.
// The `in` binary also measures the same runs while recording (BM_*Recording), the price of a
// trace. measure_overhead.sh runs both binaries alternately and reports medians and ratios.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/config.hpp"
#include "common/task_ledger.hpp"
#include "harness/trace/recorder.hpp"
#include "registry/pools.hpp"

namespace {

void spin_for(std::chrono::nanoseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until)
    wslab::cpu_relax();
}

// The grid workload: E external items, each submitting R recursive items of `spin` work.
void run_grid(wslab::IThreadPool& pool, std::size_t external, std::size_t recursive,
              std::chrono::nanoseconds spin) {
  std::atomic<std::uint64_t> ran{0};
  for (std::size_t e = 0; e < external; ++e) {
    pool.submit([&pool, &ran, recursive, spin] {
      for (std::size_t r = 0; r < recursive; ++r) {
        pool.submit([&ran, spin] {
          if (spin.count() > 0) spin_for(spin);
          ran.fetch_add(1, std::memory_order_relaxed);
        });
      }
    });
  }
  pool.wait_idle();
  if (ran.load() != external * recursive) throw std::runtime_error("grid: items lost");
}

constexpr std::size_t kExternal = 100;
constexpr std::size_t kRecursive = 100;

void grid(benchmark::State& state, const std::string& pool_name, bool recording) {
  auto pool = wslab::make_pool(pool_name, 2);
  const auto spin = std::chrono::nanoseconds(state.range(0));
  wslab::trace::Recorder recorder;
  for (auto _ : state) {
    if (recording) recorder.start();  // a fresh recording per run keeps memory bounded
    run_grid(*pool, kExternal, kRecursive, spin);
    if (recording) recorder.stop();
  }
  state.SetItemsProcessed(
      static_cast<std::int64_t>(state.iterations() * kExternal * (1 + kRecursive)));
}

// Runs one task as a worker does: not inlined into the loop below, so the compiler cannot see
// which task it gets and compiles invoke_task() as it would in a pool (otherwise it would fold
// the task's own bookkeeping away in the compiled-out build and flatter it).
__attribute__((noinline)) bool run_opaque(wslab::Task& task) {
  return static_cast<bool>(wslab::invoke_task(task));
}

// One thread running empty tasks back to back: the hooks' cost with nothing to hide it.
void invoke_empty_tasks(benchmark::State& state, bool recording) {
  wslab::trace::Recorder recorder({.max_events_per_thread = 1 << 16});
  std::uint64_t counter = 0;
  for (auto _ : state) {
    if (recording && !recorder.recording()) recorder.start();
    wslab::Task task([&counter] { ++counter; });
    benchmark::DoNotOptimize(run_opaque(task));
    // Restart before the cap: this measures recording, not dropping.
    if (recording && counter % 30000 == 0) recorder.stop();
  }
  recorder.stop();
  benchmark::DoNotOptimize(counter);
}

void register_all() {
  for (const std::string_view name : wslab::pool_names()) {
    const std::string pool(name);
    benchmark::RegisterBenchmark(("BM_Grid/" + pool).c_str(),
                                 [pool](benchmark::State& s) { grid(s, pool, false); })
        ->Arg(0)
        ->Arg(1000)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    if (wslab::trace::kCompiledIn) {
      benchmark::RegisterBenchmark(("BM_GridRecording/" + pool).c_str(),
                                   [pool](benchmark::State& s) { grid(s, pool, true); })
          ->Arg(0)
          ->Arg(1000)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
  benchmark::RegisterBenchmark("BM_InvokeTask",
                               [](benchmark::State& s) { invoke_empty_tasks(s, false); });
  if (wslab::trace::kCompiledIn) {
    benchmark::RegisterBenchmark("BM_InvokeTaskRecording",
                                 [](benchmark::State& s) { invoke_empty_tasks(s, true); });
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("wslab_tracing",
                              wslab::trace::kCompiledIn ? "compiled in" : "compiled out");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
