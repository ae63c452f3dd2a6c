// trace_demo: records a run of the `grid` workload on a registered pool and writes the pictures
// of it: a Chrome trace (open in https://ui.perfetto.dev or chrome://tracing) and two per-worker
// timelines (the whole run, and a zoom around the first steal, or the middle if nothing was
// stolen). With --runs N it records N runs and keeps the one of median duration (or, with
// --pick fastest, the fastest: on a busy machine the OS deschedules workers mid-task, which the
// picture shows as long tasks and white gaps that have nothing to do with the pool).
//
//   trace_demo --pool stage1_global_lock --runs 5 --out trace_stage1
//
// The grid (harness/workloads/grid.hpp): the main thread submits E external items; each submits R
// recursive items, then does its own work; every item spins for about --spin-ns. Every item must
// run exactly once; the demo counts them.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.hpp"
#include "harness/trace/recorder.hpp"
#include "registry/pools.hpp"

namespace {

void spin_for(std::chrono::nanoseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until)
    wslab::cpu_relax();
}

struct Grid {
  std::size_t threads;
  std::size_t external;
  std::size_t recursive;
  std::chrono::nanoseconds work;
};

struct RecordedRun {
  std::unique_ptr<wslab::trace::Recorder> recorder;
  double elapsed_ms = 0;
  wslab::PoolStats stats;
};

// One grid run on a fresh pool, recorded from the first submission to wait_idle()'s return.
RecordedRun record_grid(const std::string& pool_name, const Grid& grid,
                        wslab::trace::RecorderOptions options) {
  RecordedRun run;
  run.recorder = std::make_unique<wslab::trace::Recorder>(std::move(options));
  std::atomic<std::uint64_t> ran{0};
  auto pool = wslab::make_pool(pool_name, grid.threads);
  wslab::IThreadPool* p = pool.get();
  const std::size_t recursive = grid.recursive;
  const auto work = grid.work;
  run.recorder->start();
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t e = 0; e < grid.external; ++e) {
    p->submit([p, &ran, recursive, work] {
      for (std::size_t r = 0; r < recursive; ++r) {
        p->submit([&ran, work] {
          spin_for(work);
          ran.fetch_add(1, std::memory_order_relaxed);
        });
      }
      spin_for(work);  // then its own work, as in harness/workloads/grid.hpp
      ran.fetch_add(1, std::memory_order_relaxed);
    });
  }
  p->wait_idle();
  run.elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  run.recorder->stop();
  run.stats = p->stats();
  if (ran.load() != grid.external * (1 + grid.recursive)) {
    throw std::runtime_error(std::to_string(ran.load()) + " of " +
                             std::to_string(grid.external * (1 + grid.recursive)) + " items ran");
  }
  return run;
}

// The first steal of the run, if any worker stole.
std::optional<std::uint64_t> first_steal_ns(const wslab::trace::Recorder& recorder) {
  std::optional<std::uint64_t> first;
  for (const wslab::trace::ThreadTrace& t : recorder.threads()) {
    for (const wslab::trace::Record& r : t.events) {
      if (r.event == wslab::trace::Event::steal && (!first || r.ns < *first)) first = r.ns;
    }
  }
  return first;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Record a trace of the grid workload on one pool and render its timeline"};
  std::string pool_name = std::string(wslab::pool_names().front());
  std::size_t threads = 2;
  std::size_t external = 200;
  std::size_t recursive = 100;
  std::int64_t spin_ns = 1000;
  std::string out;
  std::uint64_t zoom_us = 20;
  std::size_t max_events = std::size_t{1} << 20;
  std::vector<std::string> known_pools;
  for (const std::string_view name : wslab::pool_names())
    known_pools.emplace_back(name);
  app.add_option("--pool", pool_name, "a registered pool")->check(CLI::IsMember(known_pools));
  app.add_option("--threads", threads, "worker threads (0: one per core)");
  app.add_option("--external,-E", external, "items the main thread submits")
      ->check(CLI::Range(1, 100000000));
  app.add_option("--recursive,-R", recursive, "items each external item submits");
  app.add_option("--spin-ns", spin_ns, "work per recursive item, in ns")
      ->check(CLI::Range(0, 100000000));
  app.add_option("--out", out,
                 "output prefix: <out>.json, <out>.png, <out>_zoom.png (default trace_<pool>)");
  app.add_option("--zoom-us", zoom_us,
                 "length of the zoomed window, around the first steal (0: none)");
  app.add_option("--max-events", max_events, "events kept per thread; more are counted as dropped")
      ->check(CLI::Range(std::size_t{1}, wslab::trace::Recorder::kMaxEventsPerThread));
  std::size_t repeat = 1;
  app.add_option("--runs", repeat, "record this many runs and keep the one of median duration")
      ->check(CLI::Range(1, 101));
  std::string pick = "median";
  app.add_option("--pick", pick,
                 "which of the --runs to keep: the median, or the fastest (the one the OS "
                 "disturbed least)")
      ->check(CLI::IsMember({"median", "fastest"}));
  bool list_pools = false;
  app.add_flag("--list-pools", list_pools, "print the registered pools, one a line, and exit");
  CLI11_PARSE(app, argc, argv);
  if (list_pools) {
    for (const std::string& name : known_pools)
      std::printf("%s\n", name.c_str());
    return 0;
  }
  if (out.empty()) out = "trace_" + pool_name;

  try {
    const Grid grid{threads, external, recursive, std::chrono::nanoseconds(spin_ns)};
    const std::string label = pool_name + ", grid E=" + std::to_string(external) +
                              " R=" + std::to_string(recursive) + ", " + std::to_string(spin_ns) +
                              " ns items";
    std::vector<RecordedRun> runs;
    for (std::size_t i = 0; i < repeat; ++i) {
      runs.push_back(
          record_grid(pool_name, grid, {.max_events_per_thread = max_events, .label = label}));
    }
    std::sort(runs.begin(), runs.end(), [](const RecordedRun& a, const RecordedRun& b) {
      return a.elapsed_ms < b.elapsed_ms;
    });
    const RecordedRun& chosen = pick == "fastest" ? runs.front() : runs[runs.size() / 2];
    const wslab::trace::Recorder& recorder = *chosen.recorder;
    const wslab::PoolStats& stats = chosen.stats;
    const double elapsed_ms = chosen.elapsed_ms;
    if (threads == 0) threads = stats.workers.size();

    recorder.write_chrome_trace(out + ".json");
    recorder.write_timeline_csv(out + ".csv");
    wslab::trace::render_timeline(out + ".csv", out + ".png", recorder.label());
    std::string zoom_note;
    const std::uint64_t zoom_ns = zoom_us * 1000;
    if (zoom_ns > 0 && zoom_ns < recorder.duration_ns()) {
      const std::optional<std::uint64_t> steal = first_steal_ns(recorder);
      // A third of the window before the steal shows what the thief was doing before it.
      std::uint64_t from =
          steal ? *steal - std::min(*steal, zoom_ns / 3) : (recorder.duration_ns() - zoom_ns) / 2;
      from = std::min(from, recorder.duration_ns() - zoom_ns);
      recorder.write_timeline_csv(out + "_zoom.csv", {.from_ns = from, .to_ns = from + zoom_ns});
      wslab::trace::render_timeline(out + "_zoom.csv", out + "_zoom.png",
                                    recorder.label() + ", " + std::to_string(zoom_us) + " us " +
                                        (steal ? "around the first steal" : "mid-run"));
      zoom_note = ", " + out + "_zoom.png";
    }

    const wslab::WorkerStats total = stats.total();
    std::printf("%s: %zu threads, %llu items in %.2f ms (the %s of %zu runs; median %.2f ms)\n",
                pool_name.c_str(), threads,
                static_cast<unsigned long long>(external * (1 + recursive)), elapsed_ms,
                pick.c_str(), repeat, runs[runs.size() / 2].elapsed_ms);
    std::printf(
        "  pool stats: local pops %llu, global pops %llu, steals %llu, failed steals %llu, "
        "parks %llu, run outside %llu\n",
        static_cast<unsigned long long>(total.local_pops),
        static_cast<unsigned long long>(total.global_pops),
        static_cast<unsigned long long>(total.steals),
        static_cast<unsigned long long>(total.failed_steals),
        static_cast<unsigned long long>(total.parks),
        static_cast<unsigned long long>(stats.tasks_run_outside));
    std::printf("  trace: %llu events recorded, %llu dropped; wrote %s.json, %s.png%s\n",
                static_cast<unsigned long long>(recorder.recorded_events()),
                static_cast<unsigned long long>(recorder.dropped_events()), out.c_str(),
                out.c_str(), zoom_note.c_str());
    if (recorder.dropped_events() > 0) {
      std::fprintf(stderr,
                   "trace_demo: %llu events were dropped at the cap of %zu per thread: the trace "
                   "is incomplete (raise --max-events)\n",
                   static_cast<unsigned long long>(recorder.dropped_events()), max_events);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trace_demo: %s\n", e.what());
    return 1;
  }
  return 0;
}
