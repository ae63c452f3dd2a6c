// Per-worker scheduling statistics: the numbers that explain why one stage beats another
// (how often a worker found work at home, went to the global queue, stole, failed, slept).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "config.hpp"

namespace wslab {

// A plain snapshot, safe to copy around and print.
struct WorkerStats {
  std::uint64_t tasks_executed = 0;  // tasks this worker ran, wherever it found them
  std::uint64_t local_pops = 0;      // taken from the worker's own queue
  std::uint64_t global_pops = 0;     // taken from the pool's shared/global queue
  std::uint64_t steals = 0;          // tasks taken from another worker's queue
  std::uint64_t failed_steals = 0;   // steal attempts that came back empty-handed or lost a race
  std::uint64_t parks = 0;           // times the worker went to sleep for lack of work
  // Steals that took something, one per lock round trip or CAS: below `steals` only where one
  // steal moves several tasks (stage 2's steal-half).
  std::uint64_t steal_ops = 0;

  WorkerStats& operator+=(const WorkerStats& o) noexcept {
    tasks_executed += o.tasks_executed;
    local_pops += o.local_pops;
    global_pops += o.global_pops;
    steals += o.steals;
    failed_steals += o.failed_steals;
    parks += o.parks;
    steal_ops += o.steal_ops;
    return *this;
  }
  // What happened between two snapshots of the same counters (they only ever grow).
  friend WorkerStats operator-(const WorkerStats& a, const WorkerStats& b) noexcept {
    return {a.tasks_executed - b.tasks_executed,
            a.local_pops - b.local_pops,
            a.global_pops - b.global_pops,
            a.steals - b.steals,
            a.failed_steals - b.failed_steals,
            a.parks - b.parks,
            a.steal_ops - b.steal_ops};
  }
  friend bool operator==(const WorkerStats&, const WorkerStats&) = default;
};

struct PoolStats {
  std::vector<WorkerStats> workers;  // one entry per worker thread, by worker index
  // Tasks run by threads that are not workers (try_run_one from outside, help-while-waiting).
  std::uint64_t tasks_run_outside = 0;

  WorkerStats total() const noexcept {
    WorkerStats sum;
    for (const WorkerStats& w : workers)
      sum += w;
    return sum;
  }
  std::uint64_t tasks_executed() const noexcept {
    return total().tasks_executed + tasks_run_outside;
  }
};

enum class Counter : std::size_t {
  tasks_executed,
  local_pops,
  global_pops,
  steals,
  failed_steals,
  parks,
  steal_ops,
  count_  // number of counters
};

// The live counters of one worker. Only the owning worker writes them, so an increment is a
// relaxed load and store (no locked read-modify-write); readers may see a slightly stale value,
// which is fine for statistics. Cache-line aligned so a worker bumping its counters never
// invalidates a line another worker is writing.
class alignas(kCacheLineSize) WorkerCounters {
 public:
  // bump(Counter::steals, n) is one steal operation that took n tasks: it counts both.
  void bump(Counter c, std::uint64_t n = 1) noexcept {
    add(c, n);
    if (c == Counter::steals) add(Counter::steal_ops, 1);
  }
  std::uint64_t get(Counter c) const noexcept {
    return values_[static_cast<std::size_t>(c)].load(std::memory_order_relaxed);
  }
  WorkerStats snapshot() const noexcept {
    return WorkerStats{get(Counter::tasks_executed), get(Counter::local_pops),
                       get(Counter::global_pops),    get(Counter::steals),
                       get(Counter::failed_steals),  get(Counter::parks),
                       get(Counter::steal_ops)};
  }

 private:
  void add(Counter c, std::uint64_t n) noexcept {
    std::atomic<std::uint64_t>& v = values_[static_cast<std::size_t>(c)];
    v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }

  std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(Counter::count_)> values_{};
};

// Counter for tasks run by non-worker threads; several threads may bump it at once.
class SharedCounter {
 public:
  void bump() noexcept { value_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t get() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  alignas(kCacheLineSize) std::atomic<std::uint64_t> value_{0};
};

// The stats() of a pool that keeps one WorkerCounters per worker and a SharedCounter for tasks run
// by other threads (every stage).
inline PoolStats collect_stats(const std::vector<WorkerCounters>& per_worker,
                               const SharedCounter& run_outside) {
  PoolStats s;
  s.workers.reserve(per_worker.size());
  for (const WorkerCounters& c : per_worker)
    s.workers.push_back(c.snapshot());
  s.tasks_run_outside = run_outside.get();
  return s;
}

}  // namespace wslab
