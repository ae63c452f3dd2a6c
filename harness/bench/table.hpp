// The terminal report: per workload cell, one table of throughput (rows = executors, columns =
// thread counts) and one of the scheduler statistics that explain it.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "harness/bench/measurement.hpp"
#include "harness/bench/report_files.hpp"

namespace wslab::bench {

// 1234567 -> "1.23M": three significant digits are all a noisy measurement deserves.
inline std::string si(double v) {
  const char* suffix = "";
  double scaled = v;
  if (std::fabs(v) >= 1e9) {
    scaled = v / 1e9;
    suffix = "G";
  } else if (std::fabs(v) >= 1e6) {
    scaled = v / 1e6;
    suffix = "M";
  } else if (std::fabs(v) >= 1e3) {
    scaled = v / 1e3;
    suffix = "k";
  }
  if (std::fabs(scaled) >= 100 || scaled == std::floor(scaled)) {
    return fmt::format("{:.0f}{}", scaled, suffix);
  }
  return fmt::format("{:.3g}{}", scaled, suffix);
}

struct TableLayout {
  std::vector<std::size_t> threads;    // the columns
  std::vector<std::string> executors;  // the rows, in order
  std::string baseline;                // speedups are over this row
};

inline const Measurement* find_measurement(const std::vector<Measurement>& all,
                                           const std::string& workload, const std::string& cell,
                                           const std::string& executor, std::size_t threads) {
  for (const Measurement& m : all) {
    if (m.workload == workload && m.cell == cell && m.executor == executor &&
        (m.threads == threads || m.threads == 0)) {  // threads 0: the same run in every column
      return &m;
    }
  }
  return nullptr;
}

// Renders the two tables of one cell, followed by its footnotes.
inline std::string render_cell_tables(const std::vector<Measurement>& all,
                                      const std::string& workload, const std::string& cell,
                                      const TableLayout& layout) {
  constexpr std::size_t kColumn = 30;
  // The name column fits the longest executor name ("stage4_chase_lev:injector_last") plus a gap.
  std::size_t name_width = 24;
  for (const std::string& ex : layout.executors)
    name_width = std::max(name_width, ex.size() + 1);
  const Measurement* any = nullptr;
  std::size_t samples = 0;
  for (const Measurement& m : all) {
    if (m.workload == workload && m.cell == cell) {
      if (any == nullptr) any = &m;
      samples = std::max(samples, m.samples.size());
    }
  }
  if (any == nullptr) return {};

  std::string out = fmt::format("\n== {} · {} · {} {} per run · median of {} runs [min, max]\n",
                                workload, cell, si(any->units_per_run), any->unit, samples);
  auto header = [&](const std::string& title) {
    out += fmt::format("{:<{}}", title, name_width);
    for (std::size_t t : layout.threads) {
      out += fmt::format("| {:<{}}", fmt::format("{} thread{}", t, t == 1 ? "" : "s"), kColumn - 2);
    }
    out += '\n';
    out += std::string(name_width, '-');
    for (std::size_t i = 0; i < layout.threads.size(); ++i)
      out += "+" + std::string(kColumn - 1, '-');
    out += '\n';
  };

  std::vector<std::string> footnotes;
  header(fmt::format("{}/s, speedup", any->unit));
  for (const std::string& ex : layout.executors) {
    std::string row = fmt::format("{:<{}}", ex, name_width);
    bool present = false;
    for (std::size_t t : layout.threads) {
      const Measurement* m = find_measurement(all, workload, cell, ex, t);
      std::string text;
      if (m == nullptr) {
        text = "";
      } else if (m->status == Status::failed) {
        present = true;
        text = "*** FAILED ***";
      } else if (m->status == Status::skipped || !m->has_data()) {
        present = true;
        text = "skipped";
      } else {
        present = true;
        const Summary s = m->throughput();
        text = fmt::format("{} [{},{}]", si(s.median), si(s.min), si(s.max));
        const Measurement* base = find_baseline(all, *m, layout.baseline, t);
        if (const auto up = speedup(*m, base)) {
          text += *up >= 0.1 ? fmt::format(" {:.2f}x", *up) : fmt::format(" {:.4f}x", *up);
        }
      }
      row += fmt::format("| {:<{}}", text, kColumn - 2);
    }
    if (!present) continue;
    out += row + '\n';
    for (std::size_t t : layout.threads) {
      const Measurement* m = find_measurement(all, workload, cell, ex, t);
      if (m == nullptr) continue;
      std::string note;
      if (m->status == Status::failed) {
        note = fmt::format("{} at {} threads FAILED: {}", ex, m->threads, m->failure);
      } else if (!m->note.empty()) {
        note = fmt::format("{}: {}", ex, m->note);
      }
      if (!note.empty() && std::find(footnotes.begin(), footnotes.end(), note) == footnotes.end()) {
        footnotes.push_back(note);
      }
    }
  }

  bool any_stats = false;
  for (const std::string& ex : layout.executors) {
    for (std::size_t t : layout.threads) {
      const Measurement* m = find_measurement(all, workload, cell, ex, t);
      any_stats = any_stats || (m != nullptr && m->has_data() && m->has_stats());
    }
  }
  if (any_stats) {
    out += '\n';
    header("steal/fail/park/global");
    for (const std::string& ex : layout.executors) {
      std::string row = fmt::format("{:<{}}", ex, name_width);
      bool present = false;
      for (std::size_t t : layout.threads) {
        const Measurement* m = find_measurement(all, workload, cell, ex, t);
        std::string text;
        if (m != nullptr && m->has_data() && m->has_stats()) {
          present = true;
          const auto st = m->stat_medians();
          // Where one steal takes several tasks, the steal operations follow in parentheses.
          const std::string stolen = st.steal_ops > 0 && st.steal_ops < st.steals
                                         ? fmt::format("{}({})", si(st.steals), si(st.steal_ops))
                                         : si(st.steals);
          text = fmt::format("{}/{}/{}/{}", stolen, si(st.failed_steals), si(st.parks),
                             si(st.global_pops));
        }
        row += fmt::format("| {:<{}}", text, kColumn - 2);
      }
      if (present) out += row + '\n';
    }
  }
  if (any_stats) {
    footnotes.push_back(
        "steal/fail/park/global: per run, summed over the workers: tasks stolen (where one steal "
        "takes several, the steal operations follow in parentheses), steal attempts that found "
        "nothing, times a worker went to sleep, tasks taken from the global queue");
  }
  if (layout.baseline.empty()) {
    footnotes.push_back("no speedups: the baseline pool was not run");
  } else {
    footnotes.push_back("speedup: median throughput over " + layout.baseline +
                        "'s at the same thread count");
  }
  for (const std::string& f : footnotes)
    out += "  * " + f + '\n';
  return out;
}

}  // namespace wslab::bench
