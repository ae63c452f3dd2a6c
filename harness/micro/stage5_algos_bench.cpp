// Stage 5 against oneTBB, same machine, same run: fib(30) by join, parallel_for,
// parallel_reduce, parallel_transform_reduce (against tbb::parallel_reduce with the same
// transform), parallel_inclusive_scan (against tbb::parallel_scan and std::inclusive_scan),
// parallel_sort of 10 million ints (also against std::sort and std::sort(std::execution::par)),
// and parallel_stable_sort against std::stable_sort and std::stable_sort(std::execution::par).
// Every wslab row is registered for every pool of the registry, so the table also shows what the
// scheduler underneath is worth. --threads N means N CPUs on every row (on_pool() below): oneTBB's
// arena has N slots, the caller in one of them; the stage-5 scheduler is called from the
// benchmark's thread, which takes its guest seat while one worker stays parked; every other pool
// gets each call as one task, since from the benchmark's thread its fork-join path would add the
// caller beside all N workers.
//
//   stage5_algos_bench --threads 2 --benchmark_repetitions=5 --benchmark_report_aggregates_only
//   stage5_algos_bench --pools stage5_parallel_algos,stage5_parallel_algos:no_guest_seat
//
// Each benchmark checks its own result once (a wrong answer aborts the run). The fib, for, reduce
// and scan rows run their operation once untimed before timing: a wslab row makes a fresh pool, and
// without it the row's mean carried the pool's first call (threads just started, stacks and
// queues not yet touched); oneTBB's rows share one arena, warmed the same way.
#include <benchmark/benchmark.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_invoke.h>
#include <oneapi/tbb/parallel_reduce.h>
#include <oneapi/tbb/parallel_scan.h>
#include <oneapi/tbb/parallel_sort.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <execution>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "registry/pool_choice.hpp"
#include "stage5_parallel_algos/algorithms/parallel_for.hpp"
#include "stage5_parallel_algos/algorithms/parallel_reduce.hpp"
#include "stage5_parallel_algos/algorithms/parallel_scan.hpp"
#include "stage5_parallel_algos/algorithms/parallel_sort.hpp"
#include "stage5_parallel_algos/algorithms/parallel_stable_sort.hpp"
#include "stage5_parallel_algos/fork_join/join.hpp"
#include "stage5_parallel_algos/fork_join/pool_handle.hpp"

namespace {

std::size_t g_threads = 2;
std::vector<std::string> g_pools;  // --pools: the wslab rows' pools (default: the registry's)
constexpr int kFibN = 30;
constexpr std::size_t kForN = 10'000'000;
constexpr std::size_t kSortN = 10'000'000;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "stage5_algos_bench: wrong result in %s\n", what);
    std::abort();
  }
}

// fib(n), iterative: the recursive form exceeds clang's constexpr step limit in kForks.
constexpr std::uint64_t fib_seq(int n) {
  std::uint64_t a = 0;  // fib(i)
  std::uint64_t b = 1;  // fib(i + 1)
  for (int i = 0; i < n; ++i) {
    const std::uint64_t next = a + b;
    a = b;
    b = next;
  }
  return a;
}
// Forks in fib(n) by join: one per call with n >= 2, i.e. fib(n + 1) - 1.
constexpr double kForks = double(fib_seq(kFibN + 1) - 1);

__attribute__((noinline)) std::uint64_t fib_plain(int n) {
  return n < 2 ? std::uint64_t(n) : fib_plain(n - 1) + fib_plain(n - 2);
}

std::uint64_t fib_join(wslab::IThreadPool& pool, int n) {
  if (n < 2) return std::uint64_t(n);
  auto [a, b] = wslab::join(
      pool, [&] { return fib_join(pool, n - 1); }, [&] { return fib_join(pool, n - 2); });
  return a + b;
}

std::uint64_t fib_tbb_invoke(int n) {
  if (n < 2) return std::uint64_t(n);
  std::uint64_t a = 0, b = 0;
  tbb::parallel_invoke([&] { a = fib_tbb_invoke(n - 1); }, [&] { b = fib_tbb_invoke(n - 2); });
  return a + b;
}

std::uint64_t fib_tbb_group(int n) {
  if (n < 2) return std::uint64_t(n);
  std::uint64_t a = 0, b = 0;
  tbb::task_group g;
  g.run([&] { b = fib_tbb_group(n - 2); });
  a = fib_tbb_group(n - 1);
  g.wait();
  return a + b;
}

void report_forks(benchmark::State& state) {
  // Wall seconds per fork; the console shows it with an SI prefix (e.g. 6.1n).
  state.counters["s_per_fork"] = benchmark::Counter(
      kForks, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// The parallel_for body: a few flops per element, enough that the loop is not purely
// memory-bound on two cores.
inline void for_body(double& x) {
  x = std::sqrt(x * 1.0001 + 1.0);
}

std::vector<double>& for_data() {
  static std::vector<double> v(kForN, 1.0);
  return v;
}

const std::vector<double>& reduce_data() {
  static const std::vector<double> v = [] {
    std::vector<double> d(kForN);
    for (std::size_t i = 0; i < d.size(); ++i)
      d[i] = double(i % 1000) * 0.5;
    return d;
  }();
  return v;
}
double reduce_expected() {
  static const double e = std::accumulate(reduce_data().begin(), reduce_data().end(), 0.0);
  return e;
}

// The transform of the transform_reduce rows: a few cycles per element, so that the rows compare
// more than the fold of a sum.
inline double transform_body(double x) {
  return std::sqrt(x);
}
double transform_reduce_expected() {
  static const double e = std::transform_reduce(reduce_data().begin(), reduce_data().end(), 0.0,
                                                std::plus<>{}, transform_body);
  return e;
}
bool transform_reduce_ok(double r) {
  return std::abs(r - transform_reduce_expected()) < 1e-9 * transform_reduce_expected();
}

// The scan rows scan reduce_data(): its elements are multiples of 0.5 and every prefix sum is
// below 2^52, so every grouping gives the exact sequential result.
std::vector<double>& scan_output() {
  static std::vector<double> v(kForN);
  return v;
}
const std::vector<double>& scan_expected() {
  static const std::vector<double> e = [] {
    std::vector<double> d(kForN);
    std::inclusive_scan(reduce_data().begin(), reduce_data().end(), d.begin());
    return d;
  }();
  return e;
}
// Checks the output once per row, and clears it for the next row.
void check_scan() {
  check(scan_output() == scan_expected(), "inclusive scan");
  std::fill(scan_output().begin(), scan_output().end(), 0.0);
}

const std::vector<int>& sort_input() {
  static const std::vector<int> v = [] {
    std::vector<int> d(kSortN);
    std::mt19937 rng(2026);
    for (int& x : d)
      x = int(rng());
    return d;
  }();
  return v;
}

// Sorting destroys the input, so each iteration copies it back outside the timed region.
template <class Sort>
void sort_bench(benchmark::State& state, Sort&& sort) {
  std::vector<int> v;
  for (auto _ : state) {
    state.PauseTiming();
    v = sort_input();
    state.ResumeTiming();
    sort(v);
  }
  check(std::is_sorted(v.begin(), v.end()), "sort");
}

std::unique_ptr<tbb::task_arena> g_arena;

// Calls f(), an algorithm on `pool`, so that the pool computes on exactly its threads' CPUs (see
// the top of the file; demo::run_on_pool explains the generic path).
template <class F>
auto on_pool(wslab::IThreadPool& pool, F&& f) {
  return wslab::with_fork_join_pool(pool, [&](wslab::ForkJoinPool auto handle) {
    // The scheduler takes an outside caller's join itself (its guest seat, or a hand-over).
    if (handle.hands_outside_joins_to_workers()) return f();
    return wslab::demo::run_on_pool(pool, f);
  });
}

// A oneTBB parallel_reduce row over reduce_data(); body(v, range, acc) folds one range, and ok(r)
// checks the result (by default: the plain sum).
template <class Body, class Ok>
void tbb_reduce_bench(benchmark::State& state, Body body, Ok ok, const char* what) {
  const auto& v = reduce_data();
  double r = 0;
  auto run = [&] {
    g_arena->execute([&] {
      r = tbb::parallel_reduce(
          tbb::blocked_range<std::size_t>(0, v.size()), 0.0,
          [&](const auto& range, double acc) { return body(v, range, acc); }, std::plus<>{});
    });
  };
  run();  // warm-up, untimed
  for (auto _ : state)
    run();
  check(ok(r), what);
}
template <class Body>
void tbb_reduce_bench(benchmark::State& state, Body body) {
  tbb_reduce_bench(
      state, body,
      [](double r) { return std::abs(r - reduce_expected()) < 1e-6 * reduce_expected(); },
      "reduce");
}

void register_all() {
  using benchmark::RegisterBenchmark;
  auto ms = [](benchmark::internal::Benchmark* b) {
    b->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime();
  };

  ms(RegisterBenchmark("fib30/sequential_call", [](benchmark::State& state) {
    std::uint64_t r = 0;
    for (auto _ : state)
      benchmark::DoNotOptimize(r = fib_plain(kFibN));
    check(r == fib_seq(kFibN), "fib");
    report_forks(state);
  }));
  ms(RegisterBenchmark("fib30/tbb_parallel_invoke", [](benchmark::State& state) {
    std::uint64_t r = 0;
    g_arena->execute([&] { r = fib_tbb_invoke(kFibN); });  // warm-up, untimed
    for (auto _ : state)
      g_arena->execute([&] { r = fib_tbb_invoke(kFibN); });
    check(r == fib_seq(kFibN), "fib");
    report_forks(state);
  }));
  ms(RegisterBenchmark("fib30/tbb_task_group", [](benchmark::State& state) {
    std::uint64_t r = 0;
    g_arena->execute([&] { r = fib_tbb_group(kFibN); });  // warm-up, untimed
    for (auto _ : state)
      g_arena->execute([&] { r = fib_tbb_group(kFibN); });
    check(r == fib_seq(kFibN), "fib");
    report_forks(state);
  }));

  ms(RegisterBenchmark("parallel_for/tbb", [](benchmark::State& state) {
    auto& v = for_data();
    auto run = [&] {
      g_arena->execute([&] {
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, v.size()), [&](const auto& r) {
          for (std::size_t i = r.begin(); i != r.end(); ++i)
            for_body(v[i]);
        });
      });
    };
    run();  // warm-up, untimed
    for (auto _ : state)
      run();
  }));
  ms(RegisterBenchmark("parallel_reduce/tbb", [](benchmark::State& state) {
    tbb_reduce_bench(state, [](const std::vector<double>& v, const auto& range, double acc) {
      for (std::size_t i = range.begin(); i != range.end(); ++i)
        acc += v[i];
      return acc;
    });
  }));
  // The same oneTBB call with the fold wslab's parallel_reduce uses inside a leaf (four
  // accumulators, parallel_reduce.hpp): a TBB user can write it by hand, and this row separates
  // what the fold gains from what the scheduling gains.
  ms(RegisterBenchmark("parallel_reduce/tbb_four_lanes", [](benchmark::State& state) {
    tbb_reduce_bench(state, [](const std::vector<double>& v, const auto& range, double acc) {
      double lanes[4] = {0.0, 0.0, 0.0, 0.0};
      std::size_t i = range.begin();
      for (; range.end() - i >= 4; i += 4)
        for (int k = 0; k < 4; ++k)
          lanes[k] += v[i + k];
      for (; i != range.end(); ++i)
        acc += v[i];
      return acc + ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]));
    });
  }));

  ms(RegisterBenchmark("parallel_transform_reduce/tbb", [](benchmark::State& state) {
    tbb_reduce_bench(
        state,
        [](const auto& v, const auto& range, double acc) {
          for (std::size_t i = range.begin(); i != range.end(); ++i)
            acc += transform_body(v[i]);
          return acc;
        },
        [](double r) { return transform_reduce_ok(r); }, "transform_reduce");
  }));

  ms(RegisterBenchmark("parallel_inclusive_scan/std_inclusive_scan", [](benchmark::State& state) {
    const auto& v = reduce_data();
    auto& out = scan_output();
    std::inclusive_scan(v.begin(), v.end(), out.begin());  // warm-up, untimed
    for (auto _ : state)
      std::inclusive_scan(v.begin(), v.end(), out.begin());
    check_scan();
  }));
  ms(RegisterBenchmark("parallel_inclusive_scan/tbb", [](benchmark::State& state) {
    const auto& v = reduce_data();
    auto& out = scan_output();
    auto run = [&] {
      g_arena->execute([&] {
        tbb::parallel_scan(
            tbb::blocked_range<std::size_t>(0, v.size()), 0.0,
            [&](const auto& range, double sum, bool is_final) {
              for (std::size_t i = range.begin(); i != range.end(); ++i) {
                sum += v[i];
                if (is_final) out[i] = sum;
              }
              return sum;
            },
            std::plus<>{});
      });
    };
    run();  // warm-up, untimed
    for (auto _ : state)
      run();
    check_scan();
  }));

  ms(RegisterBenchmark("sort10M/std_sort", [](benchmark::State& state) {
    sort_bench(state, [](std::vector<int>& v) { std::sort(v.begin(), v.end()); });
  }));
  ms(RegisterBenchmark("sort10M/std_sort_par", [](benchmark::State& state) {
    sort_bench(state, [](std::vector<int>& v) {
      g_arena->execute([&] { std::sort(std::execution::par, v.begin(), v.end()); });
    });
  }));
  ms(RegisterBenchmark("sort10M/tbb_parallel_sort", [](benchmark::State& state) {
    sort_bench(state, [](std::vector<int>& v) {
      g_arena->execute([&] { tbb::parallel_sort(v.begin(), v.end()); });
    });
  }));
  // oneTBB has no stable sort of its own; libstdc++'s parallel std::stable_sort runs on oneTBB
  // (its parallel merge sort), so it is the reference for the stable rows.
  ms(RegisterBenchmark("stable_sort10M/std_stable_sort", [](benchmark::State& state) {
    sort_bench(state, [](std::vector<int>& v) { std::stable_sort(v.begin(), v.end()); });
  }));
  ms(RegisterBenchmark("stable_sort10M/std_stable_sort_par", [](benchmark::State& state) {
    sort_bench(state, [](std::vector<int>& v) {
      g_arena->execute([&] { std::stable_sort(std::execution::par, v.begin(), v.end()); });
    });
  }));

  for (const std::string& pool_name : g_pools) {
    auto make = [pool_name] { return wslab::demo::make_any_pool(pool_name, g_threads); };
    ms(RegisterBenchmark(("fib30/join/" + pool_name).c_str(), [make](benchmark::State& state) {
      auto pool = make();
      auto run = [&] { return on_pool(*pool, [&] { return fib_join(*pool, kFibN); }); };
      std::uint64_t r = run();  // warm-up, untimed
      for (auto _ : state)
        r = run();
      check(r == fib_seq(kFibN), "fib");
      report_forks(state);
    }));
    ms(RegisterBenchmark(("parallel_for/" + pool_name).c_str(), [make](benchmark::State& state) {
      auto pool = make();
      auto& v = for_data();
      auto run = [&] {
        on_pool(*pool, [&] {
          wslab::parallel_for(*pool, v.begin(), v.end(), [](double& x) { for_body(x); });
        });
      };
      run();  // warm-up, untimed
      for (auto _ : state)
        run();
    }));
    ms(RegisterBenchmark(("parallel_reduce/" + pool_name).c_str(), [make](benchmark::State& state) {
      auto pool = make();
      const auto& v = reduce_data();
      auto run = [&] {
        return on_pool(*pool, [&] {
          return wslab::parallel_reduce(*pool, v.begin(), v.end(), 0.0, std::plus<>{});
        });
      };
      double r = run();  // warm-up, untimed
      for (auto _ : state)
        r = run();
      check(std::abs(r - reduce_expected()) < 1e-6 * reduce_expected(), "reduce");
    }));
    ms(RegisterBenchmark(("parallel_transform_reduce/" + pool_name).c_str(),
                         [make](benchmark::State& state) {
                           auto pool = make();
                           const auto& v = reduce_data();
                           auto run = [&] {
                             return on_pool(*pool, [&] {
                               return wslab::parallel_transform_reduce(
                                   *pool, v.begin(), v.end(), 0.0, std::plus<>{}, transform_body);
                             });
                           };
                           double r = run();  // warm-up, untimed
                           for (auto _ : state)
                             r = run();
                           check(transform_reduce_ok(r), "transform_reduce");
                         }));
    ms(RegisterBenchmark(
        ("parallel_inclusive_scan/" + pool_name).c_str(), [make](benchmark::State& state) {
          auto pool = make();
          const auto& v = reduce_data();
          auto& out = scan_output();
          auto run = [&] {
            on_pool(*pool, [&] {
              wslab::parallel_inclusive_scan(*pool, v.begin(), v.end(), out.begin());
            });
          };
          run();  // warm-up, untimed
          for (auto _ : state)
            run();
          check_scan();
        }));
    ms(RegisterBenchmark(
        ("sort10M/parallel_sort/" + pool_name).c_str(), [make](benchmark::State& state) {
          auto pool = make();
          sort_bench(state, [&](std::vector<int>& v) {
            on_pool(*pool, [&] { wslab::parallel_sort(*pool, v.begin(), v.end()); });
          });
        }));
    ms(RegisterBenchmark(("stable_sort10M/parallel_stable_sort/" + pool_name).c_str(),
                         [make](benchmark::State& state) {
                           auto pool = make();
                           sort_bench(state, [&](std::vector<int>& v) {
                             on_pool(*pool, [&] {
                               wslab::parallel_stable_sort(*pool, v.begin(), v.end());
                             });
                           });
                         }));
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Our own flags first: --threads N (default 2, the machine this lab reports on) and
  // --pools a,b,... (registered pools or lab variants, e.g. stage5_parallel_algos:no_guest_seat).
  for (int i = 1; i + 1 < argc;) {
    const bool threads = std::strcmp(argv[i], "--threads") == 0;
    const bool pools = std::strcmp(argv[i], "--pools") == 0;
    if (!threads && !pools) {
      ++i;
      continue;
    }
    if (threads) g_threads = std::strtoul(argv[i + 1], nullptr, 10);
    for (std::string_view list = argv[i + 1]; pools && !list.empty();) {
      const std::size_t comma = std::min(list.find(','), list.size());
      g_pools.emplace_back(list.substr(0, comma));
      list.remove_prefix(std::min(comma + 1, list.size()));
    }
    for (int j = i; j + 2 <= argc; ++j)
      argv[j] = argv[j + 2];
    argc -= 2;
  }
  if (g_threads == 0) g_threads = 1;
  if (g_pools.empty()) g_pools = wslab::demo::pool_choices();
  for (const std::string& name : g_pools) {
    if (wslab::find_pool(name) == nullptr) {
      std::fprintf(stderr, "stage5_algos_bench: unknown pool \"%s\"\n", name.c_str());
      return 2;
    }
  }
  // TBB gets the same number of threads, through an arena (the caller counts as one of them).
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, g_threads);
  g_arena = std::make_unique<tbb::task_arena>(int(g_threads));
  benchmark::AddCustomContext("threads", std::to_string(g_threads));
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_arena.reset();
  return 0;
}
