// Every workload the driver knows, in the order it runs them. A new workload is one header and
// one line here.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "harness/workloads/dirscan.hpp"
#include "harness/workloads/fib.hpp"
#include "harness/workloads/grid.hpp"
#include "harness/workloads/mandelbrot.hpp"

namespace wslab::bench {

inline const std::vector<std::unique_ptr<Workload>>& workloads() {
  static const std::vector<std::unique_ptr<Workload>> all = [] {
    std::vector<std::unique_ptr<Workload>> v;
    v.push_back(std::make_unique<GridWorkload>());
    v.push_back(std::make_unique<FibWorkload>());
    v.push_back(std::make_unique<MandelbrotWorkload>());
    v.push_back(std::make_unique<DirscanWorkload>());
    return v;
  }();
  return all;
}

inline const Workload& find_workload(std::string_view name) {
  for (const auto& w : workloads()) {
    if (w->name() == name) return *w;
  }
  throw std::invalid_argument("unknown workload \"" + std::string(name) +
                              "\" (grid, fib, mandelbrot, dirscan)");
}

}  // namespace wslab::bench
