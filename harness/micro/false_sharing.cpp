// false_sharing: two threads, each incrementing only its own counter, with the two counters on one
// cache line ("shared") or wslab::kCacheLineSize apart ("padded"). No data is shared either way;
// only the layout differs, so the difference in time is the cost of false sharing.
//
//   false_sharing_micro                            # both ways, both operations, and the ratios
//   false_sharing_micro --benchmark_repetitions=5  # the ratio of the medians of five runs
//
// One benchmark iteration: the benchmark's thread does kBatch increments of its counter while a
// helper thread increments its own over the same window (each pinned to its own CPU, so that they
// can run at the same time). What is timed is the CPU time each thread spends incrementing, on
// its own thread clock, so that a thread descheduled by other work on the machine is not charged
// for the wait. Per batch, the cost of an increment is both threads' CPU time over both threads'
// increments; `ns_per_increment` is its mean over the batches, and `Time` the same cost times
// kBatch (one thread's time for a batch). Two operations:
//   fetch_add - counter.fetch_add(1, relaxed): a locked read-modify-write (x86: lock xadd), which
//               needs the line exclusive while it executes;
//   store     - counter.store(counter.load(relaxed) + 1, relaxed): a plain load and a plain store
//               (x86: mov), which the store buffer can hide for a while, but not for long.
// After the table the program prints, per operation, the median `Time` of `shared` over that of
// `padded`. False sharing needs both threads running at once: on a busy machine they overlap less
// and the ratio falls toward 1.
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/config.hpp"
#include "cpu_pinning.hpp"

namespace {

constexpr std::int64_t kBatch = 1 << 20;  // the benchmark thread's increments per iteration

// Both counters in the first 16 bytes of one cache line.
struct alignas(wslab::kCacheLineSize) SharedLine {
  std::atomic<std::uint64_t> count[2]{};
  std::atomic<std::uint64_t>& of(int thread) { return count[thread]; }
};
static_assert(sizeof(SharedLine) == wslab::kCacheLineSize);

// Each counter on a cache line of its own.
struct PaddedLines {
  struct alignas(wslab::kCacheLineSize) Line {
    std::atomic<std::uint64_t> count{};
  };
  Line line[2];
  std::atomic<std::uint64_t>& of(int thread) { return line[thread].count; }
};
static_assert(sizeof(PaddedLines) == 2 * wslab::kCacheLineSize);

enum class Op { fetch_add, store };

template <Op op>
void increment(std::atomic<std::uint64_t>& counter, std::int64_t times) {
  for (std::int64_t i = 0; i < times; ++i) {
    if constexpr (op == Op::fetch_add) {
      counter.fetch_add(1, std::memory_order_relaxed);
    } else {
      counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
  }
}

// CPU time of the calling thread, in nanoseconds.
std::int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

template <class Layout, Op op>
void two_counters(benchmark::State& state) {
  const std::vector<int> cpus = wslab::bench::allowed_cpus(2);
  if (cpus.size() < 2) {
    state.SkipWithError("needs two CPUs: with one, the threads take turns and nothing is shared");
    return;
  }
  cpu_set_t saved;
  pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved);
  wslab::bench::pin(pthread_self(), cpus[0]);

  Layout layout;
  // Batch k: the benchmark's thread does kBatch increments, then sets `window_end` to k; the
  // helper, once it sees `started` at k, increments in chunks until then. Both are timed on their
  // own thread clocks, and the helper reports its time and count before `finished` = k.
  std::atomic<std::int64_t> started{0}, window_end{0}, finished{0};
  std::atomic<std::int64_t> helper_ns{0}, helper_count{0};
  std::atomic<bool> quit{false};
  std::thread helper([&] {
    constexpr std::int64_t kChunk = 1024;
    for (std::int64_t k = 1;; ++k) {
      while (started.load(std::memory_order_acquire) < k) {
        if (quit.load(std::memory_order_acquire)) return;
        wslab::cpu_relax();
      }
      const std::int64_t start = thread_cpu_ns();
      std::int64_t count = 0;
      while (window_end.load(std::memory_order_acquire) < k) {
        increment<op>(layout.of(1), kChunk);
        count += kChunk;
      }
      helper_ns.store(thread_cpu_ns() - start, std::memory_order_relaxed);
      helper_count.store(count, std::memory_order_relaxed);
      finished.store(k, std::memory_order_release);
    }
  });
  wslab::bench::pin(helper.native_handle(), cpus[1]);

  std::int64_t batch = 0;
  double increments = 0;      // both threads, all batches
  double sum_ns_per_inc = 0;  // over the batches
  for (auto _ : state) {
    started.store(++batch, std::memory_order_release);
    const std::int64_t start = thread_cpu_ns();
    increment<op>(layout.of(0), kBatch);
    const std::int64_t mine = thread_cpu_ns() - start;
    window_end.store(batch, std::memory_order_release);
    while (finished.load(std::memory_order_acquire) != batch)
      wslab::cpu_relax();
    // Both threads' CPU time over both threads' increments in this batch.
    const auto batch_increments =
        static_cast<double>(kBatch + helper_count.load(std::memory_order_relaxed));
    const double ns_per_inc =
        static_cast<double>(mine + helper_ns.load(std::memory_order_relaxed)) / batch_increments;
    state.SetIterationTime(1e-9 * ns_per_inc * static_cast<double>(kBatch));
    sum_ns_per_inc += ns_per_inc;
    increments += batch_increments;
  }
  quit.store(true, std::memory_order_release);
  helper.join();
  pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);

  if (layout.of(0).load() != static_cast<std::uint64_t>(batch * kBatch) ||
      static_cast<double>(layout.of(0).load() + layout.of(1).load()) != increments) {
    state.SkipWithError("a counter lost an increment");
  }
  if (batch > 0) state.counters["ns_per_increment"] = sum_ns_per_inc / static_cast<double>(batch);
}

// The console table, then per operation the median `Time` of `shared` over that of `padded`.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  // Colours only on a terminal, as Google Benchmark's own console reporter does by default.
  RatioReporter() : ConsoleReporter(isatty(fileno(stdout)) ? OO_ColorTabular : OO_Tabular) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      if (run.run_type == Run::RT_Iteration) {
        times_[run.run_name.function_name].push_back(run.GetAdjustedRealTime());
      } else if (run.aggregate_name == "median") {  // --benchmark_report_aggregates_only
        medians_[run.run_name.function_name] = run.GetAdjustedRealTime();
        runs_[run.run_name.function_name] = static_cast<std::size_t>(run.repetitions);
      }
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    for (const char* op : {"fetch_add", "store"}) {
      const std::string name = std::string("false_sharing/") + op;
      const double shared = median(name + "/shared");
      const double padded = median(name + "/padded");
      if (shared > 0 && padded > 0) {
        std::printf("%-9s shared line / padded: %.2fx (median of %zu runs each)\n", op,
                    shared / padded, count(name + "/shared"));
      }
    }
  }

 private:
  double median(const std::string& name) {
    if (const auto m = medians_.find(name); m != medians_.end()) return m->second;
    std::vector<double>& t = times_[name];
    if (t.empty()) return 0;
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
  std::size_t count(const std::string& name) {
    return runs_.count(name) != 0 ? runs_[name] : times_[name].size();
  }

  std::map<std::string, std::vector<double>> times_;  // every repetition's time per batch
  std::map<std::string, double> medians_;  // Google Benchmark's median, when only it is reported
  std::map<std::string, std::size_t> runs_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("false_sharing/fetch_add/padded",
                               two_counters<PaddedLines, Op::fetch_add>)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("false_sharing/fetch_add/shared",
                               two_counters<SharedLine, Op::fetch_add>)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("false_sharing/store/padded", two_counters<PaddedLines, Op::store>)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("false_sharing/store/shared", two_counters<SharedLine, Op::store>)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
