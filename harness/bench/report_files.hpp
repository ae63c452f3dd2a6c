// The machine-readable copies of the results: one JSON document (everything, raw samples
// included) and one CSV table (one row per configuration, for spreadsheets and scripts).
#pragma once

#include <fmt/format.h>

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "harness/bench/measurement.hpp"

namespace wslab::bench {

// The version of the JSON document's layout. harness/README.md ("The JSON document") documents
// every field as a contract; the version goes up when a documented field is removed, renamed, or
// changes its type, unit or meaning. Adding a field leaves it unchanged.
inline constexpr int kJsonSchemaVersion = 1;

// Facts about the run that make its numbers interpretable later.
struct RunInfo {
  std::string date_utc;
  std::string cpu_model;
  unsigned hardware_threads = 0;
  std::string command_line;
  std::string baseline;  // the executor speedups are computed over
  std::size_t processes = 0, repetitions = 0, warmups = 0;
  double spin_ns_per_iteration = 0;
  std::uint64_t async_cap = 0;
  // /proc/loadavg's 1-minute figure when the run started and ended: on a shared machine, the
  // first thing to check before believing a table.
  double load_average_start = 0, load_average_end = 0;
};

inline std::string json_escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;
        }
    }
  }
  return out;
}

// RFC 4180: quote a field that holds a comma, a quote or a line break; double inner quotes.
inline std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

// The measurement of the baseline executor for the same cell and thread count, if any.
inline const Measurement* find_baseline(const std::vector<Measurement>& all, const Measurement& m,
                                        const std::string& baseline, std::size_t threads) {
  for (const Measurement& b : all) {
    if (b.executor == baseline && b.workload == m.workload && b.cell == m.cell &&
        b.threads == threads) {
      return &b;
    }
  }
  return nullptr;
}

inline void write_json(std::ostream& out, const RunInfo& info,
                       const std::vector<Measurement>& all) {
  out << "{\n  \"schema_version\": " << kJsonSchemaVersion << ",\n  \"run\": {";
  out << fmt::format(
      "\"date_utc\": \"{}\", \"cpu_model\": \"{}\", \"hardware_threads\": {}, "
      "\"command_line\": \"{}\", \"baseline\": \"{}\", \"processes\": {}, \"repetitions\": {}, "
      "\"warmups\": {}, \"spin_ns_per_iteration\": {:.6g}, \"async_cap\": {}, "
      "\"load_average_start\": {:.2f}, \"load_average_end\": {:.2f}",
      json_escape(info.date_utc), json_escape(info.cpu_model), info.hardware_threads,
      json_escape(info.command_line), json_escape(info.baseline), info.processes, info.repetitions,
      info.warmups, info.spin_ns_per_iteration, info.async_cap, info.load_average_start,
      info.load_average_end);
  out << "},\n  \"results\": [";
  bool first = true;
  for (const Measurement& m : all) {
    out << (first ? "\n" : ",\n");
    first = false;
    out << fmt::format(
        "    {{\"workload\": \"{}\", \"cell\": \"{}\", \"params\": \"{}\", \"executor\": \"{}\", "
        "\"threads\": {}, \"unit\": \"{}\", \"units_per_run\": {:.10g}, \"status\": \"{}\", "
        "\"failure\": \"{}\", \"note\": \"{}\", \"processes\": {}",
        json_escape(m.workload), json_escape(m.cell), json_escape(m.params),
        json_escape(m.executor), m.threads, json_escape(m.unit), m.units_per_run,
        to_string(m.status), json_escape(m.failure), json_escape(m.note), m.processes);
    if (m.has_data()) {
      const Summary t = m.throughput(), s = m.seconds();
      out << fmt::format(
          ", \"throughput\": {{\"median\": {:.6g}, \"min\": {:.6g}, \"max\": {:.6g}}}, "
          "\"seconds\": {{\"median\": {:.6g}, \"min\": {:.6g}, \"max\": {:.6g}}}",
          t.median, t.min, t.max, s.median, s.min, s.max);
      if (const auto up = speedup(m, find_baseline(all, m, info.baseline, m.threads))) {
        out << fmt::format(", \"speedup_over_baseline\": {:.4g}", *up);
      }
      if (m.has_stats()) {
        const auto st = m.stat_medians();
        out << fmt::format(
            ", \"stats_median\": {{\"tasks_executed\": {:.10g}, \"local_pops\": {:.10g}, "
            "\"global_pops\": {:.10g}, \"steals\": {:.10g}, \"failed_steals\": {:.10g}, "
            "\"parks\": {:.10g}, \"busiest_worker_share\": {:.4g}, \"steal_ops\": {:.10g}}}",
            st.tasks_executed, st.local_pops, st.global_pops, st.steals, st.failed_steals, st.parks,
            st.busiest_share, st.steal_ops);
      }
      out << ", \"samples_seconds\": [";
      for (std::size_t i = 0; i < m.samples.size(); ++i) {
        out << (i ? ", " : "") << fmt::format("{:.6g}", m.samples[i].seconds);
      }
      out << "]";
    }
    out << "}";
  }
  out << "\n  ]\n}\n";
}

inline constexpr std::string_view kCsvHeader =
    "workload,cell,executor,threads,status,unit,units_per_run,samples,processes,"
    "throughput_median,throughput_min,throughput_max,seconds_median,speedup_over_baseline,"
    "steals,failed_steals,parks,global_pops,local_pops,busiest_worker_share,steal_ops,note,failure";

inline void write_csv(std::ostream& out, const RunInfo& info, const std::vector<Measurement>& all) {
  out << kCsvHeader << '\n';
  for (const Measurement& m : all) {
    out << fmt::format("{},{},{},{},{},{},{:.10g},{},{},", csv_field(m.workload), csv_field(m.cell),
                       csv_field(m.executor), m.threads, to_string(m.status), csv_field(m.unit),
                       m.units_per_run, m.samples.size(), m.processes);
    if (m.has_data()) {
      const Summary t = m.throughput();
      out << fmt::format("{:.6g},{:.6g},{:.6g},{:.6g},", t.median, t.min, t.max,
                         m.seconds().median);
      const auto up = speedup(m, find_baseline(all, m, info.baseline, m.threads));
      out << (up ? fmt::format("{:.4g}", *up) : std::string()) << ',';
      if (m.has_stats()) {
        const auto st = m.stat_medians();
        out << fmt::format("{:.10g},{:.10g},{:.10g},{:.10g},{:.10g},{:.4g},{:.10g},", st.steals,
                           st.failed_steals, st.parks, st.global_pops, st.local_pops,
                           st.busiest_share, st.steal_ops);
      } else {
        out << ",,,,,,,";
      }
    } else {
      out << ",,,,,,,,,,,,";
    }
    out << csv_field(m.note) << ',' << csv_field(m.failure) << '\n';
  }
}

}  // namespace wslab::bench
