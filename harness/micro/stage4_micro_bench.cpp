// Stage-4 micro-benchmarks (Google Benchmark). Run in Release:
//   build/<dir>/harness/stage4_micro_bench --benchmark_repetitions=5 \
//       --benchmark_report_aggregates_only=true
// Rows: the deque alone (push+pop pair, uncontended steal); submit+execute of an empty task on
// one worker for every registered pool and oneTBB's task_group; push-to-start latency on a
// spinning and on a parked worker; an idle pool's CPU use; the recursive grids and external
// submission, as items/s (BM_Grid) and as speedups over a sequential loop (BM_GridSpeedup,
// BM_GridSpeedupCold), beside the machine's own two-thread speedup (BM_MachineSpeedup).
#include <benchmark/benchmark.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "harness/bench/spin_work.hpp"
#include "registry/pools.hpp"
#include "stage4_chase_lev/chase_lev_deque.hpp"
#include "stage4_chase_lev/chase_lev_pool.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// ---- the deque alone ----

void BM_DequeOwnerPushPop(benchmark::State& state) {
  wslab::ChaseLevDeque<std::uintptr_t> d(1024);
  std::uintptr_t x = 1;
  for (auto _ : state) {
    d.push(x);
    auto got = d.pop();
    benchmark::DoNotOptimize(got);
    ++x;
  }
  state.counters["ns_per_pair"] =
      benchmark::Counter(static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_DequeOwnerPushPop);

// A successful steal with nobody else touching the deque (the thief is the only thread).
void BM_DequeStealUncontended(benchmark::State& state) {
  constexpr std::uintptr_t kBatch = 4096;
  wslab::ChaseLevDeque<std::uintptr_t> d(kBatch);
  std::uintptr_t left = 0;
  for (auto _ : state) {
    if (left == 0) {
      state.PauseTiming();
      for (std::uintptr_t i = 0; i < kBatch; ++i)
        d.push(i + 1);
      left = kBatch;
      state.ResumeTiming();
    }
    auto r = d.steal();
    benchmark::DoNotOptimize(r);
    --left;
  }
  state.counters["ns_per_steal"] =
      benchmark::Counter(static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
// PauseTiming costs ~1 us per refill; batches of 4096 keep that under 0.3 ns per steal.
BENCHMARK(BM_DequeStealUncontended);

// ---- submit + execute of an empty task on one worker ----
// A driver task on the pool's only worker submits `batch` empty tasks, then runs them with
// try_run_one() on the same worker, `rounds` times. Reported per task: wall time, and the CPU
// time of the thread that did the work (the driver's thread), which stays meaningful when the
// machine is shared (wall time then includes time slices given to other processes). An
// iteration is a million tasks, so that the one wake-up per iteration does not weigh.

constexpr int kBatch = 1000;
constexpr int kRounds = 1000;

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

void report_per_task(benchmark::State& state, double tasks, double work_cpu_ns) {
  state.SetItemsProcessed(static_cast<std::int64_t>(tasks));
  state.counters["ns_per_task"] =
      benchmark::Counter(tasks, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  if (work_cpu_ns > 0) state.counters["cpu_ns_per_task"] = work_cpu_ns / tasks;
}

// Through the IThreadPool interface (virtual submit(Task)), for every registered pool.
void BM_SpawnExecute(benchmark::State& state, std::string pool_name) {
  auto pool = wslab::make_pool(pool_name, 1);
  double cpu = 0;
  for (auto _ : state) {
    pool->submit([&] {
      const double c0 = thread_cpu_ns();
      for (int r = 0; r < kRounds; ++r) {
        for (int i = 0; i < kBatch; ++i)
          pool->submit([] {});
        while (pool->try_run_one()) {
        }
      }
      cpu += thread_cpu_ns() - c0;
    });
    pool->wait_idle();
  }
  report_per_task(state, static_cast<double>(state.iterations()) * kBatch * kRounds, cpu);
}

// One batch of a million submitted by one task; the worker loop runs them after it returns (the
// deque grows to 2^20 and every task is a heap node).
void BM_SpawnExecuteStage4OneMillion(benchmark::State& state) {
  wslab::ChaseLevPool pool(1);
  constexpr int kMillion = 1'000'000;
  for (auto _ : state) {
    pool.submit([&] {
      for (int i = 0; i < kMillion; ++i)
        pool.submit([] {});
    });
    pool.wait_idle();
  }
  report_per_task(state, static_cast<double>(state.iterations()) * kMillion, 0.0);
}
BENCHMARK(BM_SpawnExecuteStage4OneMillion)->UseRealTime()->Unit(benchmark::kMillisecond);

// oneTBB's task_group in an arena of one thread (the calling thread runs the tasks in wait()),
// batches of 1,000: the reference row.
void BM_SpawnExecuteTbbTaskGroup(benchmark::State& state) {
  tbb::task_arena arena(1);
  double cpu = 0;
  for (auto _ : state) {
    arena.execute([&] {
      const double c0 = thread_cpu_ns();
      for (int r = 0; r < kRounds; ++r) {
        tbb::task_group g;
        for (int i = 0; i < kBatch; ++i)
          g.run([] {});
        g.wait();
      }
      cpu += thread_cpu_ns() - c0;
    });
  }
  report_per_task(state, static_cast<double>(state.iterations()) * kBatch * kRounds, cpu);
}
BENCHMARK(BM_SpawnExecuteTbbTaskGroup)->UseRealTime();

void BM_SpawnExecuteTbbOneMillion(benchmark::State& state) {
  tbb::task_arena arena(1);
  constexpr int kMillion = 1'000'000;
  for (auto _ : state) {
    arena.execute([&] {
      tbb::task_group g;
      for (int i = 0; i < kMillion; ++i)
        g.run([] {});
      g.wait();
    });
  }
  report_per_task(state, static_cast<double>(state.iterations()) * kMillion, 0.0);
}
BENCHMARK(BM_SpawnExecuteTbbOneMillion)->UseRealTime()->Unit(benchmark::kMillisecond);

// ---- push-to-start latency ----
// A driver task on worker A pushes a probe task onto its own deque and waits, without popping,
// until worker B has started it; then it pauses (`gap`) and probes again. With a gap of a few
// microseconds B is still spinning in its search loop when the next probe arrives; with a gap
// of 5 ms B has parked (its spin budget is far shorter), so the probe measures a futex wake-up.
// Reported: the median and 90th percentile over all probes.

void push_to_start(benchmark::State& state, std::chrono::nanoseconds gap, int probes) {
  wslab::ChaseLevPool pool(2);
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(probes) * 64);
  for (auto _ : state) {
    double total_ns = 0;
    pool.submit([&] {
      for (int p = 0; p < probes; ++p) {
        const Clock::time_point until = Clock::now() + gap;
        if (gap > std::chrono::microseconds(100)) {
          std::this_thread::sleep_for(gap);
        } else {
          while (Clock::now() < until)
            wslab::cpu_relax();
        }
        std::atomic<std::int64_t> started{0};
        const Clock::time_point pushed = Clock::now();
        pool.submit([&started] {
          started.store(Clock::now().time_since_epoch().count(), std::memory_order_release);
        });
        while (started.load(std::memory_order_acquire) == 0)
          wslab::cpu_relax();
        const double ns = static_cast<double>(started.load() - pushed.time_since_epoch().count());
        samples.push_back(ns);
        total_ns += ns;
      }
    });
    pool.wait_idle();
    state.SetIterationTime(total_ns * 1e-9 / probes);
  }
  std::sort(samples.begin(), samples.end());
  state.counters["median_ns"] = samples.empty() ? 0.0 : samples[samples.size() / 2];
  state.counters["p90_ns"] = samples.empty() ? 0.0 : samples[samples.size() * 9 / 10];
}

void BM_PushToStartSpinning(benchmark::State& state) {
  push_to_start(state, std::chrono::microseconds(2), 1000);
}
BENCHMARK(BM_PushToStartSpinning)->UseManualTime()->Iterations(20);

void BM_PushToStartParked(benchmark::State& state) {
  push_to_start(state, std::chrono::milliseconds(5), 20);
}
BENCHMARK(BM_PushToStartParked)->UseManualTime()->Iterations(10)->Unit(benchmark::kMicrosecond);

// ---- an idle pool's CPU use ----
// After a burst of work, the pool sits idle for one second; the process's CPU time over that
// second (main thread asleep) is what the parked workers burn. Target: under 1 ms per second.

void BM_IdleCpuPerSecond(benchmark::State& state) {
  wslab::ChaseLevPool pool(2);
  double cpu_ms = 0;
  for (auto _ : state) {
    for (int i = 0; i < 10000; ++i)
      pool.submit([] {});
    pool.wait_idle();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the spin budget run out
    timespec a{};
    timespec b{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    cpu_ms += static_cast<double>(b.tv_sec - a.tv_sec) * 1e3 +
              static_cast<double>(b.tv_nsec - a.tv_nsec) * 1e-6;
  }
  state.counters["idle_cpu_ms_per_s"] = cpu_ms / static_cast<double>(state.iterations());
}
BENCHMARK(BM_IdleCpuPerSecond)->Iterations(3)->Unit(benchmark::kMillisecond);

// ---- Duffy's recursive-queueing grids and external submission, at 2 threads ----
// E external tasks, each queueing R recursive ones; every item spins ~100 ns ("tiny", as in the
// harness's grid workload). Items/s counts all E * (R + 1) items. The sequential row runs the
// same items' work in a plain loop: the pools' rows divided by it are the speedups.

std::uint64_t g_tiny_iterations = 0;

void tiny_work() {
  wslab::bench::consume(wslab::bench::spin_work(g_tiny_iterations, 7));
}

void grid(wslab::IThreadPool& pool, int externals, int recursive) {
  for (int e = 0; e < externals; ++e) {
    pool.submit([&pool, recursive] {
      for (int r = 0; r < recursive; ++r)
        pool.submit([] { tiny_work(); });
      tiny_work();
    });
  }
  pool.wait_idle();
}

// The sequential baseline: `items` items in a plain loop on the calling thread.
void run_items(std::int64_t items) {
  for (std::int64_t i = 0; i < items; ++i)
    tiny_work();
}

std::int64_t grid_items(int externals, int recursive) {
  return static_cast<std::int64_t>(externals) * (recursive + 1);
}

// The median of per-iteration speedups, with the extremes beside it.
void report_speedups(benchmark::State& state, std::vector<double> ratios) {
  std::sort(ratios.begin(), ratios.end());
  state.counters["speedup"] = ratios[ratios.size() / 2];
  state.counters["speedup_min"] = ratios.front();
  state.counters["speedup_max"] = ratios.back();
}

double process_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// cpu_ns_per_item: the whole process's CPU time per item (workers, submitter and spinning
// included). On a shared machine wall-clock speedups mean little; this does: an item's own work
// is ~100 ns, the rest is what scheduling it cost.
void BM_Grid(benchmark::State& state, std::string pool_name, int externals, int recursive) {
  auto pool = wslab::make_pool(pool_name, 2);
  const double c0 = process_cpu_ns();
  for (auto _ : state)
    grid(*pool, externals, recursive);
  const double items = static_cast<double>(state.iterations()) *
                       static_cast<double>(grid_items(externals, recursive));
  state.counters["cpu_ns_per_item"] = (process_cpu_ns() - c0) / items;
  state.SetItemsProcessed(static_cast<std::int64_t>(items));
}

void BM_GridSequential(benchmark::State& state, int externals, int recursive) {
  const std::int64_t items = grid_items(externals, recursive);
  const double c0 = process_cpu_ns();
  for (auto _ : state)
    run_items(items);
  state.counters["cpu_ns_per_item"] =
      (process_cpu_ns() - c0) / (static_cast<double>(state.iterations()) * items);
  state.SetItemsProcessed(state.iterations() * items);
}

// The same grid on oneTBB: a task_group in an arena of 2 (the caller is one of the two).
void grid_tbb(tbb::task_arena& arena, int externals, int recursive) {
  arena.execute([&] {
    tbb::task_group g;
    for (int e = 0; e < externals; ++e) {
      g.run([&g, recursive] {
        for (int r = 0; r < recursive; ++r)
          g.run([] { tiny_work(); });
        tiny_work();
      });
    }
    g.wait();
  });
}

void BM_GridTbb(benchmark::State& state, int externals, int recursive) {
  tbb::task_arena arena(2);
  const double c0 = process_cpu_ns();
  for (auto _ : state)
    grid_tbb(arena, externals, recursive);
  const double items = static_cast<double>(state.iterations()) *
                       static_cast<double>(grid_items(externals, recursive));
  state.counters["cpu_ns_per_item"] = (process_cpu_ns() - c0) / items;
  state.SetItemsProcessed(static_cast<std::int64_t>(items));
}

// The speedup over a sequential loop, measured in pairs: each iteration runs the items in a plain
// loop and then on the pool, back to back, and the median of the per-pair ratios is reported.
// On this VM the clock speed drifts by 10-20 % over minutes, so a sequential row measured at
// another moment than the pool row (BM_Grid/sequential) makes a poor denominator.
//
// `warm` runs between the two, untimed: it hands the pool one empty task and waits for it. The
// sequential loop keeps one vCPU busy for ~100 ms while the pool's workers park and the other
// vCPU halts, and a virtual machine may then take up to milliseconds to run a woken thread
// there: without `warm` each pair would also time that wake-up, which is the machine's latency
// and not the grid's throughput. (BM_GridSpeedupCold keeps it in, for comparison.)
template <class Warm, class RunOnPool>
void paired_speedup(benchmark::State& state, int externals, int recursive, Warm&& warm,
                    RunOnPool&& run) {
  const std::int64_t items = grid_items(externals, recursive);
  std::vector<double> ratios;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    run_items(items);
    const auto t1_cold = Clock::now();
    warm();
    const auto t1 = Clock::now();
    run();
    const auto t2 = Clock::now();
    ratios.push_back(std::chrono::duration<double>(t1_cold - t0).count() /
                     std::chrono::duration<double>(t2 - t1).count());
  }
  report_speedups(state, std::move(ratios));
}

// The machine's own speedup, measured the same way: the items in a plain loop on one thread, then
// the same loop on two plain threads at once (each doing all the items: the ratio is twice the
// one-thread time over the two-thread time). On a dedicated 2-core machine it is 2.0. On this
// VM it is not always: when the host runs the two vCPUs on one physical core's two hardware
// threads, or time-shares them, it drops towards 1, and every pool's grid speedup drops with it.
// Quote the grid rows next to this one, from the same run.
void BM_MachineSpeedup(benchmark::State& state) {
  auto loop = [] { run_items(1'000'000); };
  std::vector<double> ratios;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    loop();
    const auto t1 = Clock::now();
    std::thread other(loop);
    loop();
    other.join();
    const auto t2 = Clock::now();
    ratios.push_back(2.0 * std::chrono::duration<double>(t1 - t0).count() /
                     std::chrono::duration<double>(t2 - t1).count());
  }
  report_speedups(state, std::move(ratios));
}

void BM_GridSpeedup(benchmark::State& state, std::string pool_name, int externals, int recursive) {
  auto pool = wslab::make_pool(pool_name, 2);
  auto warm = [&] {
    pool->submit([] {});
    pool->wait_idle();
  };
  paired_speedup(state, externals, recursive, warm, [&] { grid(*pool, externals, recursive); });
}

// The same without the warm-up: each pair also times waking the parked pool on this VM.
void BM_GridSpeedupCold(benchmark::State& state, std::string pool_name, int externals,
                        int recursive) {
  auto pool = wslab::make_pool(pool_name, 2);
  paired_speedup(state, externals, recursive, [] {}, [&] { grid(*pool, externals, recursive); });
}

void BM_GridSpeedupTbb(benchmark::State& state, int externals, int recursive) {
  tbb::task_arena arena(2);
  auto warm = [&] {
    arena.execute([] {
      tbb::task_group g;
      g.run([] {});
      g.wait();
    });
  };
  paired_speedup(state, externals, recursive, warm, [&] { grid_tbb(arena, externals, recursive); });
}

void register_all() {
  for (std::string_view name : wslab::pool_names()) {
    const std::string n(name);
    benchmark::RegisterBenchmark(("BM_SpawnExecute/" + n).c_str(), BM_SpawnExecute, n)
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark("BM_MachineSpeedup", BM_MachineSpeedup)
      ->Iterations(15)
      ->Unit(benchmark::kMillisecond);
  const std::pair<int, int> shapes[] = {{10000, 100}, {100, 10000}, {1000000, 0}};
  for (auto [e, r] : shapes) {
    const std::string shape = std::to_string(e) + "x" + std::to_string(r);
    benchmark::RegisterBenchmark(("BM_Grid/sequential/" + shape).c_str(), BM_GridSequential, e, r)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_Grid/onetbb/" + shape).c_str(), BM_GridTbb, e, r)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    for (std::string_view name : wslab::pool_names()) {
      const std::string n(name);
      benchmark::RegisterBenchmark(("BM_Grid/" + n + "/" + shape).c_str(), BM_Grid, n, e, r)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
    benchmark::RegisterBenchmark(("BM_GridSpeedup/stage4_chase_lev/" + shape).c_str(),
                                 BM_GridSpeedup, std::string("stage4_chase_lev"), e, r)
        ->Iterations(15)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_GridSpeedup/onetbb/" + shape).c_str(), BM_GridSpeedupTbb, e,
                                 r)
        ->Iterations(15)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_GridSpeedupCold/stage4_chase_lev/" + shape).c_str(),
                                 BM_GridSpeedupCold, std::string("stage4_chase_lev"), e, r)
        ->Iterations(15)
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  g_tiny_iterations = wslab::bench::calibrate_item_iterations(
      100.0, wslab::bench::calibrate_spin_ns_per_iteration());
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
