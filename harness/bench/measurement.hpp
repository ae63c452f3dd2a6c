// What the driver records for one configuration (workload cell x executor x thread count): the
// samples its child processes reported, and whether every repetition verified. Everything the
// tables, JSON, CSV and plots show is derived from these.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/stats.hpp"
#include "harness/bench/statistics.hpp"

namespace wslab::bench {

// One timed repetition.
struct Sample {
  double seconds = 0;
  bool has_stats = false;  // references (oneTBB, std::async) keep no scheduler statistics
  WorkerStats totals;      // summed over the pool's workers, for this repetition only
  std::uint64_t run_outside = 0;
  double busiest_share = 0;  // the busiest worker's share of the tasks (1/threads = balanced)
};

// The child -> driver protocol, one line per sample. Plain text because it only ever travels
// between two copies of the same binary.
inline std::string encode_sample(const Sample& s) {
  const WorkerStats& t = s.totals;
  return fmt::format("sample {:.9g} {} {} {} {} {} {} {} {} {} {:.6g}", s.seconds,
                     s.has_stats ? 1 : 0, t.tasks_executed, t.local_pops, t.global_pops, t.steals,
                     t.failed_steals, t.parks, t.steal_ops, s.run_outside, s.busiest_share);
}

inline std::optional<Sample> decode_sample(const std::string& line) {
  std::istringstream in(line);
  std::string tag;
  Sample s;
  int has_stats = 0;
  WorkerStats& t = s.totals;
  in >> tag >> s.seconds >> has_stats >> t.tasks_executed >> t.local_pops >> t.global_pops >>
      t.steals >> t.failed_steals >> t.parks >> t.steal_ops >> s.run_outside >> s.busiest_share;
  if (!in || tag != "sample" || s.seconds <= 0) return std::nullopt;
  s.has_stats = has_stats != 0;
  return s;
}

enum class Status { ok, failed, skipped };

inline const char* to_string(Status s) noexcept {
  switch (s) {
    case Status::ok:
      return "ok";
    case Status::failed:
      return "FAILED";
    case Status::skipped:
      return "skipped";
  }
  return "?";
}

struct Measurement {
  std::string workload;     // "grid"
  std::string cell;         // "tiny 10000x100"
  std::string params;       // the parameter string the children ran
  std::string executor;     // pool name, "oneTBB" or "std::async"
  std::size_t threads = 0;  // 0: the executor picks its own (std::async: one per task)
  std::string unit;         // "items"
  double units_per_run = 0;
  std::string note;  // e.g. why std::async ran a smaller problem
  Status status = Status::ok;
  std::string failure;        // what went wrong, when status == failed
  std::size_t processes = 0;  // child processes that reported
  std::vector<Sample> samples;

  bool has_data() const noexcept { return status == Status::ok && !samples.empty(); }

  Summary throughput() const {  // units per second
    std::vector<double> v;
    for (const Sample& s : samples)
      v.push_back(units_per_run / s.seconds);
    return summarize(std::move(v));
  }
  Summary seconds() const {
    std::vector<double> v;
    for (const Sample& s : samples)
      v.push_back(s.seconds);
    return summarize(std::move(v));
  }
  bool has_stats() const noexcept { return !samples.empty() && samples.front().has_stats; }

  // Medians of the per-repetition statistics.
  struct StatMedians {
    double tasks_executed, local_pops, global_pops, steals, failed_steals, parks, busiest_share,
        steal_ops;
  };
  StatMedians stat_medians() const {
    auto median_of = [&](auto field) {
      std::vector<double> v;
      for (const Sample& s : samples)
        v.push_back(static_cast<double>(field(s)));
      return summarize(std::move(v)).median;
    };
    return {median_of([](const Sample& s) { return s.totals.tasks_executed; }),
            median_of([](const Sample& s) { return s.totals.local_pops; }),
            median_of([](const Sample& s) { return s.totals.global_pops; }),
            median_of([](const Sample& s) { return s.totals.steals; }),
            median_of([](const Sample& s) { return s.totals.failed_steals; }),
            median_of([](const Sample& s) { return s.totals.parks; }),
            median_of([](const Sample& s) { return s.busiest_share; }),
            median_of([](const Sample& s) { return s.totals.steal_ops; })};
  }
};

// Median throughput of `m` over that of `baseline` (same cell, same thread count), if both ran
// and the baseline did some work (a cell of no units, e.g. an empty directory, has no speedup).
inline std::optional<double> speedup(const Measurement& m, const Measurement* baseline) {
  if (baseline == nullptr || !m.has_data() || !baseline->has_data()) return std::nullopt;
  const double base = baseline->throughput().median;
  if (!(base > 0)) return std::nullopt;
  return m.throughput().median / base;
}

}  // namespace wslab::bench
