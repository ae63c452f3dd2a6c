// The shape every workload has, so that the driver can run, time and verify any of them the same
// way. A workload is a family of cells (one parameter set each, e.g. grid 10000x100 with tiny
// work); the driver computes a cell's expected result once, then every repetition in every child
// process is checked against it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "harness/bench/executor.hpp"
#include "harness/bench/params.hpp"

namespace wslab::bench {

// The outcome of checking one repetition. A failed verdict says what was expected and what was
// seen, so a pool that loses or repeats a task is reported with evidence.
struct Verdict {
  bool ok = true;
  std::string detail;
};

// What the driver needs to know about one cell to schedule it and to print its throughput.
struct CellInfo {
  std::string label;         // short, for tables and file names: "tiny 10000x100"
  std::string unit;          // what throughput counts: "items", "tasks", "pixels", "entries"
  double units_per_run = 0;  // units one repetition processes
  std::uint64_t tasks = 0;   // tasks one repetition submits (the std::async cap looks at it)
};

// One cell, prepared in one process and run repeatedly.
class CellRun {
 public:
  virtual ~CellRun() = default;
  virtual void reset() {}              // untimed, before each repetition
  virtual void run(Executor& ex) = 0;  // timed: submit everything, then ex.wait()
  virtual Verdict verify() const = 0;  // untimed, after each repetition
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string_view name() const noexcept = 0;
  virtual std::string_view summary() const noexcept = 0;
  // The expected result of a cell, as a string handed to the child processes. May be expensive
  // (Mandelbrot computes the image sequentially); it runs once per cell in the driver.
  virtual std::string reference(const Params& params) const = 0;
  virtual CellInfo describe(const Params& params, const std::string& expected) const = 0;
  virtual std::unique_ptr<CellRun> prepare(const Params& params,
                                           const std::string& expected) const = 0;
  // A smaller version of the cell submitting at most max_tasks tasks, for executors that cannot
  // take the full one (std::async); nullopt if the workload cannot shrink this cell.
  virtual std::optional<Params> shrink(const Params& params, const std::string& expected,
                                       std::uint64_t max_tasks) const = 0;
};

}  // namespace wslab::bench
