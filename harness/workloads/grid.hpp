// grid: Duffy's recursive-queueing harness. The main thread queues E external items; each one,
// when it runs, queues R recursive items from inside the pool, then does its own work. Every item
// spins for a calibrated time (tiny ~100 ns, small ~1 us, ...).
//
// (E x 0) is pure external submission: every task passes through whatever queue outside threads
// use. (100 x 10,000) is almost all recursive: a pool that keeps recursive work local wins.
//
// Verification: each item has an id in [0, E*(R+1)); the run must count exactly E*(R+1) items,
// and the sum of the ids and of a 64-bit mix of the ids must match, so a lost item plus a
// repeated one does not cancel out.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "harness/bench/spin_work.hpp"
#include "harness/bench/tally.hpp"
#include "harness/workloads/workload.hpp"

namespace wslab::bench {

class GridWorkload final : public Workload {
 public:
  // work: a named work size (label only); iters: spin iterations per item, calibrated by the
  // driver so every process does the same amount of work.
  static Params make_params(std::uint64_t external, std::uint64_t recursive, std::string_view work,
                            std::uint64_t spin_iterations) {
    Params p;
    p.set("E", external).set("R", recursive).set("work", std::string(work));
    p.set("iters", spin_iterations);
    return p;
  }

  std::string_view name() const noexcept override { return "grid"; }
  std::string_view summary() const noexcept override {
    return "E external items, each queueing R recursive items; calibrated spin per item";
  }

  struct Expected {
    std::uint64_t count = 0, id_sum = 0, mix_sum = 0;
  };

  static Expected expected_for(std::uint64_t items) noexcept {
    Expected e;
    e.count = items;
    // n(n-1)/2 modulo 2^64: halve whichever factor is even before multiplying.
    e.id_sum = items % 2 == 0 ? (items / 2) * (items - 1) : items * ((items - 1) / 2);
    if (items == 0) e.id_sum = 0;
    for (std::uint64_t id = 0; id < items; ++id)
      e.mix_sum += mix64(id);
    return e;
  }

  static std::uint64_t items_of(const Params& p) {
    const std::uint64_t e = p.u64("E"), r = p.u64("R");
    if (r >= std::numeric_limits<std::uint64_t>::max() / 2 || (e != 0 && r + 1 > UINT64_MAX / e)) {
      throw std::invalid_argument("grid: E x (R+1) overflows");
    }
    return e * (r + 1);
  }

  std::string reference(const Params& p) const override {
    const Expected e = expected_for(items_of(p));
    return fmt::format("{} {} {}", e.count, e.id_sum, e.mix_sum);
  }

  CellInfo describe(const Params& p, const std::string&) const override {
    CellInfo info;
    info.label = fmt::format("{} {}x{}", p.str("work"), p.u64("E"), p.u64("R"));
    info.unit = "items";
    info.tasks = items_of(p);
    info.units_per_run = static_cast<double>(info.tasks);
    return info;
  }

  std::unique_ptr<CellRun> prepare(const Params& p, const std::string& expected) const override {
    return std::make_unique<Run>(p, expected);
  }

  std::optional<Params> shrink(const Params& p, const std::string&,
                               std::uint64_t max_tasks) const override {
    if (max_tasks == 0) return std::nullopt;
    Params q = p;
    const std::uint64_t r = p.u64("R");
    if (r + 1 <= max_tasks) {
      q.set("E", std::min(p.u64("E"), max_tasks / (r + 1)));
    } else {
      q.set("E", 1).set("R", max_tasks - 1);
    }
    return q;
  }

 private:
  enum Field : std::size_t { kCount, kIdSum, kMixSum };

  class Run final : public CellRun {
   public:
    Run(const Params& p, const std::string& expected)
        : external_(p.u64("E")), recursive_(p.u64("R")), iterations_(p.u64("iters")) {
      const std::vector<std::uint64_t> v = parse_numbers(expected, 3, "grid");
      expected_ = Expected{v[0], v[1], v[2]};
    }

    void reset() override { tally_.clear(); }

    void run(Executor& ex) override {
      executor_ = &ex;
      for (std::uint64_t e = 0; e < external_; ++e) {
        ex.submit([this, e] { external_item(e); });
      }
      ex.wait();
    }

    Verdict verify() const override {
      const Expected seen{tally_.total(kCount), tally_.total(kIdSum), tally_.total(kMixSum)};
      if (seen.count == expected_.count && seen.id_sum == expected_.id_sum &&
          seen.mix_sum == expected_.mix_sum) {
        return {};
      }
      return {false, fmt::format("grid {}x{}: {} items ran, expected {} (id sum {} vs {}, mix "
                                 "sum {:x} vs {:x}): tasks were lost or run twice",
                                 external_, recursive_, seen.count, expected_.count, seen.id_sum,
                                 expected_.id_sum, seen.mix_sum, expected_.mix_sum)};
    }

   private:
    void external_item(std::uint64_t e) {
      const std::uint64_t first = e * (recursive_ + 1);
      for (std::uint64_t r = 1; r <= recursive_; ++r) {
        executor_->submit([this, id = first + r] { item(id); });
      }
      item(first);
    }

    void item(std::uint64_t id) {
      consume(spin_work(iterations_, id));
      tally_.add(kCount, 1);
      tally_.add(kIdSum, id);
      tally_.add(kMixSum, mix64(id));
    }

    std::uint64_t external_, recursive_, iterations_;
    Expected expected_;
    Executor* executor_ = nullptr;
    ShardedTally<3> tally_;
  };
};

}  // namespace wslab::bench
