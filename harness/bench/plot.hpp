// The plots, drawn by gnuplot. The data and the gnuplot script are written next to each image, so
// a plot can be restyled without re-running anything.
//   - plot_workload: one PNG per workload, a panel per cell, throughput against thread count, a
//     line per executor, error bars from the slowest to the fastest run.
//   - plot_projector: with --projector, one PNG per cell for a projector: each executor's speedup
//     over its own run at the smallest thread count (one thread by default), large fonts, the
//     ideal speedup, the oversubscribed columns (more threads than cores) shaded and starred;
//     oneTBB drawn dashed as a reference, std::async left out (it ignores the thread count, so
//     its speedup is 1 by construction).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness/bench/measurement.hpp"
#include "harness/bench/table.hpp"

namespace wslab::bench {

inline std::string gnuplot_quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'')
      out += "''";  // gnuplot doubles a single quote inside single quotes
    else
      out += c;
  }
  return out + "'";
}

inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

// What the plots need beyond the table layout.
struct PlotOptions {
  std::size_t hardware_threads = 0;     // thread counts above it are oversubscribed (0: unknown)
  std::vector<std::string> references;  // executors that are no pool (oneTBB, std::async)
};

namespace detail {

inline bool oversubscribed(std::size_t threads, const PlotOptions& o) {
  return o.hardware_threads != 0 && threads > o.hardware_threads;
}

// The x axis over the thread counts (log 2), starred where oversubscribed as in the tables, with
// an explicit range: gnuplot warns about an empty x range when only one count was run.
inline std::string thread_axis(const std::vector<std::size_t>& threads, const PlotOptions& o) {
  std::string tics;
  for (std::size_t t : threads)
    tics +=
        fmt::format("{}'{}{}' {}", tics.empty() ? "" : ", ", t, oversubscribed(t, o) ? "*" : "", t);
  const auto [lo, hi] = std::minmax_element(threads.begin(), threads.end());
  return fmt::format("set xlabel 'threads'\nset logscale x 2\nset xtics ({})\nset xrange [{}:{}]\n",
                     tics, static_cast<double>(*lo) / 1.4, static_cast<double>(*hi) * 1.4);
}

// A file name's part for a cell label: "tiny 10000x100" -> "tiny-10000x100".
inline std::string slug(const std::string& label) {
  std::string out;
  for (const char c : label) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (keep) {
      out += c;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-')
    out.pop_back();
  return out;
}

inline bool run_gnuplot(const std::filesystem::path& script, const std::filesystem::path& data) {
  const std::string command = "gnuplot " + shell_quote(script.string());
  if (std::system(command.c_str()) != 0) {
    fmt::print(stderr, "lab_bench: gnuplot failed on {}; the data is in {}\n", script.string(),
               data.string());
    return false;
  }
  return true;
}

}  // namespace detail

// Writes <dir>/<workload>.dat and .gp and runs gnuplot on them. Returns the PNG's path, or an
// empty path (with a warning on stderr) when there was nothing to plot or gnuplot failed.
inline std::filesystem::path plot_workload(const std::filesystem::path& dir,
                                           const std::vector<Measurement>& all,
                                           const std::string& workload,
                                           const std::vector<std::string>& cells,
                                           const TableLayout& layout,
                                           const PlotOptions& options = {}) {
  const std::filesystem::path data = dir / (workload + ".dat");
  const std::filesystem::path script = dir / (workload + ".gp");
  const std::filesystem::path image = dir / (workload + ".png");

  std::ofstream dat(data);
  std::string plots;
  std::size_t block = 0;
  const std::size_t columns = cells.size() <= 3 ? cells.size() : (cells.size() + 1) / 2;
  const std::size_t rows = (cells.size() + columns - 1) / columns;
  for (const std::string& cell : cells) {
    std::vector<std::string> lines;
    std::string unit = "items";
    for (const std::string& ex : layout.executors) {
      std::string points;
      for (std::size_t t : layout.threads) {
        const Measurement* m = find_measurement(all, workload, cell, ex, t);
        if (m == nullptr || !m->has_data()) continue;
        unit = m->unit;
        const Summary s = m->throughput();
        points += fmt::format("{} {:.6g} {:.6g} {:.6g}\n", t, s.median, s.min, s.max);
      }
      if (points.empty()) continue;
      dat << "# " << cell << " / " << ex << '\n' << points << "\n\n";
      lines.push_back(fmt::format("{} index {} using 1:2:3:4 with yerrorlines title {}",
                                  gnuplot_quote(data.string()), block++, gnuplot_quote(ex)));
    }
    if (lines.empty()) continue;
    plots += fmt::format("set title {}\nset ylabel {}\nplot ", gnuplot_quote(workload + " " + cell),
                         gnuplot_quote(unit + " per second"));
    for (std::size_t i = 0; i < lines.size(); ++i)
      plots += (i ? ", \\\n     " : "") + lines[i];
    plots += '\n';
  }
  dat.close();
  if (block == 0) return {};

  std::ofstream gp(script);
  // noenhanced: pool names are full of underscores, which enhanced text would take for subscripts.
  gp << fmt::format("set terminal pngcairo noenhanced size {},{} font 'sans,9'\n", 520 * columns,
                    440 * rows)
     << "set output " << gnuplot_quote(image.string()) << '\n'
     << detail::thread_axis(layout.threads, options)
     << "set yrange [0:*]\nset format y '%.1s%c'\nset key outside below\nset grid\n"
     << fmt::format("set multiplot layout {},{}\n", rows, columns) << plots << "unset multiplot\n";
  gp.close();
  return detail::run_gnuplot(script, data) ? image : std::filesystem::path{};
}

// Writes <dir>/<workload>-<cell>-projector.{dat,gp,png} for every cell that has an executor with
// two thread counts or more, and returns the PNGs' paths.
inline std::vector<std::filesystem::path> plot_projector(const std::filesystem::path& dir,
                                                         const std::vector<Measurement>& all,
                                                         const std::string& workload,
                                                         const std::vector<std::string>& cells,
                                                         const TableLayout& layout,
                                                         const PlotOptions& options) {
  std::vector<std::filesystem::path> images;
  if (layout.threads.size() < 2) return images;  // no speedup to show
  const std::size_t t0 = *std::min_element(layout.threads.begin(), layout.threads.end());
  const std::size_t t_max = *std::max_element(layout.threads.begin(), layout.threads.end());
  for (const std::string& cell : cells) {
    const std::string name = workload + "-" + detail::slug(cell) + "-projector";
    const std::filesystem::path data = dir / (name + ".dat");
    const std::filesystem::path script = dir / (name + ".gp");
    const std::filesystem::path image = dir / (name + ".png");
    std::ofstream dat(data);
    std::vector<std::string> lines;
    std::size_t block = 0;
    for (const std::string& ex : layout.executors) {
      const bool reference = std::find(options.references.begin(), options.references.end(), ex) !=
                             options.references.end();
      const Measurement* base = find_measurement(all, workload, cell, ex, t0);
      // Left out: no run at the smallest count, or one run whatever the count (std::async).
      if (base == nullptr || !base->has_data() || base->threads == 0) continue;
      const double base_median = base->throughput().median;
      std::string points;
      std::size_t count = 0;
      for (std::size_t t : layout.threads) {
        const Measurement* m = find_measurement(all, workload, cell, ex, t);
        if (m == nullptr || !m->has_data()) continue;
        const Summary s = m->throughput();
        points += fmt::format("{} {:.4g} {:.4g} {:.4g}\n", t, s.median / base_median,
                              s.min / base_median, s.max / base_median);
        ++count;
      }
      if (count < 2) continue;
      dat << "# " << cell << " / " << ex << ": speedup over " << t0 << " thread(s)\n"
          << points << "\n\n";
      lines.push_back(fmt::format(
          "{} index {} using 1:2:3:4 with yerrorlines {} title {}", gnuplot_quote(data.string()),
          block++, reference ? "lw 3 dt 2 lc rgb 'black' pt 6 ps 2.5" : "lw 4 pt 7 ps 2.5",
          gnuplot_quote(ex)));
    }
    dat.close();
    if (lines.empty()) continue;

    // 16:9, large type, the key inside the top left over room the offset keeps free of data,
    // strong colours that stay apart on a washed-out projector (ColorBrewer's Set1).
    std::string gp_text =
        "set terminal pngcairo noenhanced size 1920,1080 font 'sans,26'\n"
        "set output " +
        gnuplot_quote(image.string()) + "\n" +
        fmt::format("set title {}\n", gnuplot_quote(workload + " " + cell)) +
        detail::thread_axis(layout.threads, options) +
        fmt::format("set ylabel 'speedup over {} thread{}'\n", t0, t0 == 1 ? "" : "s") +
        "set yrange [0:*]\nset offsets 0, 0, graph 0.5, 0\nset grid\n"
        "set key inside top left opaque box spacing 1.1 font 'sans,22'\n"
        "set linetype 1 lc rgb '#e41a1c'\nset linetype 2 lc rgb '#377eb8'\n"
        "set linetype 3 lc rgb '#4daf4a'\nset linetype 4 lc rgb '#984ea3'\n"
        "set linetype 5 lc rgb '#ff7f00'\nset linetype 6 lc rgb '#a65628'\n"
        "set linetype 7 lc rgb '#f781bf'\nset linetype 8 lc rgb '#999999'\n"
        "set linetype cycle 8\n";
    const double cores =
        static_cast<double>(options.hardware_threads != 0 ? options.hardware_threads : t_max);
    // The oversubscribed columns: shaded from half-way (on the log axis) between the core count
    // and the next count above it.
    std::size_t first_over = 0;
    for (std::size_t t : layout.threads) {
      if (detail::oversubscribed(t, options) && (first_over == 0 || t < first_over)) first_over = t;
    }
    if (first_over != 0) {
      const double edge = std::sqrt(static_cast<double>(first_over) * cores);
      gp_text += fmt::format(
          "set object 1 rect from {:.4g}, graph 0 to graph 1, graph 1 behind "
          "fillcolor rgb '#e8e8e8' fillstyle solid noborder\n"
          "set label 1 'threads > cores' at graph 0.98, graph 0.05 right front font 'sans,20'\n",
          edge);
    }
    // The ideal: speedup t/t0 up to the core count, flat beyond it.
    gp_text +=
        fmt::format("ideal(x) = (x < {0} ? x : {0}) / {1}\n", cores, static_cast<double>(t0));
    gp_text += "plot ";
    for (std::size_t i = 0; i < lines.size(); ++i)
      gp_text += (i ? ", \\\n     " : "") + lines[i];
    gp_text += fmt::format(
        ", \\\n     [{}:{}] ideal(x) with lines lw 3 dt 3 lc rgb 'gray40' "
        "title 'ideal'\n",
        static_cast<double>(t0), static_cast<double>(t_max));
    std::ofstream gp(script);
    gp << gp_text;
    gp.close();
    if (detail::run_gnuplot(script, data)) images.push_back(image);
  }
  return images;
}

}  // namespace wslab::bench
