// One PNG per workload, drawn by gnuplot: a panel per cell, throughput against thread count, a
// line per executor, error bars from the fastest to the slowest run. The data and the gnuplot
// script are written next to the image, so a plot can be restyled without re-running anything.
#pragma once

#include <fmt/format.h>

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

// Writes <dir>/<workload>.dat and .gp and runs gnuplot on them. Returns the PNG's path, or an
// empty path (with a warning on stderr) when there was nothing to plot or gnuplot failed.
inline std::filesystem::path plot_workload(const std::filesystem::path& dir,
                                           const std::vector<Measurement>& all,
                                           const std::string& workload,
                                           const std::vector<std::string>& cells,
                                           const TableLayout& layout) {
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

  std::string xtics;
  for (std::size_t t : layout.threads)
    xtics += fmt::format("{}{}", xtics.empty() ? "" : ",", t);
  std::ofstream gp(script);
  // noenhanced: pool names are full of underscores, which enhanced text would take for subscripts.
  gp << fmt::format("set terminal pngcairo noenhanced size {},{} font 'sans,9'\n", 520 * columns,
                    440 * rows)
     << "set output " << gnuplot_quote(image.string()) << '\n'
     << "set xlabel 'threads'\nset logscale x 2\nset xtics (" << xtics << ")\n"
     << "set yrange [0:*]\nset format y '%.1s%c'\nset key outside below\nset grid\n"
     << "set offsets graph 0.05, graph 0.05, 0, 0\n"
     << fmt::format("set multiplot layout {},{}\n", rows, columns) << plots << "unset multiplot\n";
  gp.close();

  const std::string command = "gnuplot " + shell_quote(script.string());
  if (std::system(command.c_str()) != 0) {
    fmt::print(stderr, "lab_bench: gnuplot failed on {}; the data is in {}\n", script.string(),
               data.string());
    return {};
  }
  return image;
}

}  // namespace wslab::bench
