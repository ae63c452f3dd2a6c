// Stage-4 micro-benchmarks (Google Benchmark). Run in Release:
//   build/<dir>/stage4_chase_lev/stage4_micro_bench --benchmark_repetitions=5 \
//       --benchmark_report_aggregates_only=true
// Rows: the deque alone (push+pop pair, uncontended steal); spawn+execute of an empty task on
// one worker for stage 4, every registered pool and oneTBB's task_group; push-to-start latency
// on a spinning and on a parked worker; the recursive grids and external submission.
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

#include "harness/pools.hpp"
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

// ---- spawn + execute of an empty task on one worker ----
// A driver task on the pool's only worker spawns `batch` empty tasks, then runs them with
// try_run_one() on the same worker, `rounds` times. Reported per task: wall time, and the CPU
// time of the thread that did the work (the driver's thread), which stays meaningful when the
// machine is shared (wall time then includes time slices given to other processes).

constexpr int kBatch = 1000;
constexpr int kRounds = 100;

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

// Stage 4 through its concrete type and spawn(): the callable is built in the task node.
void BM_SpawnExecuteStage4Spawn(benchmark::State& state) {
  wslab::ChaseLevPool pool(1);
  double cpu = 0;
  for (auto _ : state) {
    pool.submit([&] {
      const double c0 = thread_cpu_ns();
      for (int r = 0; r < kRounds; ++r) {
        for (int i = 0; i < kBatch; ++i)
          pool.spawn([] {});
        while (pool.try_run_one()) {
        }
      }
      cpu += thread_cpu_ns() - c0;
    });
    pool.wait_idle();
  }
  report_per_task(state, static_cast<double>(state.iterations()) * kBatch * kRounds, cpu);
}
BENCHMARK(BM_SpawnExecuteStage4Spawn)->UseRealTime();

// One batch of a million spawned by one task; the worker loop runs them after it returns.
void BM_SpawnExecuteStage4OneMillion(benchmark::State& state) {
  wslab::ChaseLevPool pool(1);
  constexpr int kMillion = 1'000'000;
  for (auto _ : state) {
    pool.submit([&] {
      for (int i = 0; i < kMillion; ++i)
        pool.spawn([] {});
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
// Worker A (running a driver task) pushes a task onto its own deque and waits, without popping,
// until worker B has started it; B either spins (it just finished the previous task and is
// inside its spin budget) or is parked (A waited long enough for B to park first).

void push_to_start(benchmark::State& state, bool parked) {
  wslab::ChaseLevPool pool(2);
  std::vector<double> samples;
  samples.reserve(100000);
  for (auto _ : state) {
    std::atomic<std::int64_t> started{0};
    Clock::time_point pushed;
    pool.submit([&] {
      if (parked) std::this_thread::sleep_for(std::chrono::milliseconds(3));
      pushed = Clock::now();
      pool.submit([&] {
        started.store(Clock::now().time_since_epoch().count(), std::memory_order_release);
      });
      while (started.load(std::memory_order_acquire) == 0)
        wslab::cpu_relax();
    });
    pool.wait_idle();
    const double ns = static_cast<double>(started.load() - pushed.time_since_epoch().count());
    samples.push_back(ns);
    state.SetIterationTime(ns * 1e-9);
  }
  std::sort(samples.begin(), samples.end());
  state.counters["median_ns"] = samples.empty() ? 0.0 : samples[samples.size() / 2];
  state.counters["p90_ns"] = samples.empty() ? 0.0 : samples[samples.size() * 9 / 10];
}

void BM_PushToStartSpinning(benchmark::State& state) {
  push_to_start(state, false);
}
BENCHMARK(BM_PushToStartSpinning)->UseManualTime()->Iterations(20000);

void BM_PushToStartParked(benchmark::State& state) {
  push_to_start(state, true);
}
BENCHMARK(BM_PushToStartParked)->UseManualTime()->Iterations(200)->Unit(benchmark::kMicrosecond);

// ---- Duffy's recursive-queueing grids and external submission, at 2 threads ----
// E external tasks, each queueing R tiny recursive ones. Items/s counts all E * (R + 1) items.

void tiny_work() {
  int x = 0;
  benchmark::DoNotOptimize(x);
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

void BM_Grid(benchmark::State& state, std::string pool_name, int externals, int recursive) {
  auto pool = wslab::make_pool(pool_name, 2);
  for (auto _ : state)
    grid(*pool, externals, recursive);
  state.SetItemsProcessed(state.iterations() * externals * (recursive + 1));
}

void BM_GridSequential(benchmark::State& state, int externals, int recursive) {
  // The same items run by one thread with no pool: each item is a Task built and invoked, as a
  // pool would, so the ratio shows scheduling cost against parallelism.
  std::vector<wslab::Task> queue;
  for (auto _ : state) {
    for (int e = 0; e < externals; ++e) {
      wslab::Task t([&queue, recursive] {
        for (int r = 0; r < recursive; ++r)
          queue.emplace_back([] { tiny_work(); });
        tiny_work();
      });
      t();
      for (wslab::Task& child : queue)
        child();
      queue.clear();
    }
  }
  state.SetItemsProcessed(state.iterations() * externals * (recursive + 1));
}

void BM_GridTbb(benchmark::State& state, int externals, int recursive) {
  tbb::task_arena arena(2);
  for (auto _ : state) {
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
  state.SetItemsProcessed(state.iterations() * externals * (recursive + 1));
}

void register_all() {
  for (std::string_view name : wslab::pool_names()) {
    const std::string n(name);
    benchmark::RegisterBenchmark(("BM_SpawnExecute/" + n).c_str(), BM_SpawnExecute, n)
        ->UseRealTime();
  }
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
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
