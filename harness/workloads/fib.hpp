// fib: fork-join by recursive queueing, with no sequential cut-off. A call with n >= 2 queues
// fib(n-1) as a new task and goes on computing fib(n-2) itself (which queues fib(n-3), and so
// on); a call with n < 2 is a leaf. Nearly every task is created from inside the pool and does
// almost no work, so this measures the scheduler's per-task cost and how well it keeps a worker
// fed from its own queue.
//
// No task ever blocks waiting for a child (a pool worker may not wait_idle() on its own pool):
// each task adds up its leaves and the pool draining is the join. Verification: the leaves add
// up to fib(n), and exactly tasks_for(n) tasks ran.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/bench/tally.hpp"
#include "harness/workloads/workload.hpp"

namespace wslab::bench {

class FibWorkload final : public Workload {
 public:
  static constexpr std::uint64_t kMaxN = 60;  // beyond this the task count is astronomical

  static Params make_params(std::uint64_t n) {
    Params p;
    p.set("n", n);
    return p;
  }

  static std::uint64_t fib(std::uint64_t n) noexcept {
    std::uint64_t a = 0, b = 1;
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t next = a + b;
      a = b;
      b = next;
    }
    return a;
  }

  // Tasks one fib(n) run creates: tasks(n) = 1 + the tasks of every child it queues, and it
  // queues fib(m-1) for m = n, n-2, n-4, ... while m >= 2.
  static std::uint64_t tasks_for(std::uint64_t n) {
    std::vector<std::uint64_t> t(n + 1, 1);
    for (std::uint64_t k = 0; k <= n; ++k) {
      std::uint64_t total = 1;
      for (std::uint64_t m = k; m >= 2; m -= 2)
        total += t[m - 1];
      t[k] = total;
    }
    return t[n];
  }

  std::string_view name() const noexcept override { return "fib"; }
  std::string_view summary() const noexcept override {
    return "fork-join fib(n) by recursive queueing, no cut-off (scheduler overhead per task)";
  }

  static std::uint64_t checked_n(const Params& p) {
    const std::uint64_t n = p.u64("n");
    if (n > kMaxN) throw std::invalid_argument(fmt::format("fib: n={} is above {}", n, kMaxN));
    return n;
  }

  std::string reference(const Params& p) const override {
    const std::uint64_t n = checked_n(p);
    return fmt::format("{} {}", tasks_for(n), fib(n));
  }

  CellInfo describe(const Params& p, const std::string&) const override {
    const std::uint64_t n = checked_n(p);
    return {fmt::format("fib({})", n), "tasks", static_cast<double>(tasks_for(n)), tasks_for(n)};
  }

  std::unique_ptr<CellRun> prepare(const Params& p, const std::string& expected) const override {
    return std::make_unique<Run>(checked_n(p), expected);
  }

  std::optional<Params> shrink(const Params& p, const std::string&,
                               std::uint64_t max_tasks) const override {
    std::uint64_t n = checked_n(p);
    while (n > 0 && tasks_for(n) > max_tasks)
      --n;
    if (tasks_for(n) > max_tasks) return std::nullopt;
    return make_params(n);
  }

 private:
  enum Field : std::size_t { kTasks, kLeafSum };

  class Run final : public CellRun {
   public:
    Run(std::uint64_t n, const std::string& expected) : n_(n) {
      const std::vector<std::uint64_t> v = parse_numbers(expected, 2, "fib");
      expected_tasks_ = v[0];
      expected_value_ = v[1];
    }

    void reset() override { tally_.clear(); }

    void run(Executor& ex) override {
      executor_ = &ex;
      ex.submit([this] { call(n_); });
      ex.wait();
    }

    Verdict verify() const override {
      const std::uint64_t tasks = tally_.total(kTasks), value = tally_.total(kLeafSum);
      if (tasks == expected_tasks_ && value == expected_value_) return {};
      return {false, fmt::format("fib({}): {} tasks ran (expected {}), leaves sum to {} "
                                 "(expected {}): tasks were lost or run twice",
                                 n_, tasks, expected_tasks_, value, expected_value_)};
    }

   private:
    void call(std::uint64_t n) {
      while (n >= 2) {
        executor_->submit([this, child = n - 1] { call(child); });
        n -= 2;
      }
      tally_.add(kTasks, 1);
      tally_.add(kLeafSum, n);  // fib(0) = 0, fib(1) = 1
    }

    std::uint64_t n_;
    std::uint64_t expected_tasks_ = 0, expected_value_ = 0;
    Executor* executor_ = nullptr;
    ShardedTally<2> tally_;
  };
};

}  // namespace wslab::bench
