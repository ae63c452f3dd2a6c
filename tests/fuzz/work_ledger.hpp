// The fuzzer's bookkeeping: every unit of work a random program creates (a spawned task, a half
// of a join, a future's job or continuation, a group's callable, a co_join's child) gets an id and
// a ticket. Running punches the ticket; a ticket destroyed unpunched means the work was dropped (a
// cancelled group's callable, the continuation of a failed future). At the end each id must have
// been run exactly once, or dropped where dropping is allowed, and never both. The ledger also
// remembers what started and did not finish, for the watchdog's report of a hang.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace wslab::fuzz {

// What a unit of work is, for the reports.
enum class Kind : std::uint8_t {
  root,
  spawned,
  join_a,
  join_b,
  future_job,
  continuation,
  group,
  co_child,
  ref_leaf
};

inline const char* kind_name(Kind k) {
  switch (k) {
    case Kind::root:
      return "root";
    case Kind::spawned:
      return "spawned task";
    case Kind::join_a:
      return "join a";
    case Kind::join_b:
      return "join b";
    case Kind::future_job:
      return "future job";
    case Kind::continuation:
      return "continuation";
    case Kind::group:
      return "group callable";
    case Kind::co_child:
      return "co_join child";
    case Kind::ref_leaf:
      return "WorkerRef tree leaf";
  }
  return "?";
}

// What must become of a unit: run exactly once, dropped (never run), or either (cancellation).
enum class Fate : std::uint8_t { run, drop, either };

class WorkLedger {
 public:
  explicit WorkLedger(std::size_t capacity)
      : capacity_(capacity), slots_(std::make_unique<Slot[]>(capacity)) {}

  // A new id, or none once the program's budget is spent (the caller then makes no more work).
  std::optional<std::uint32_t> create(Kind kind, Fate fate, int depth) {
    const std::size_t id = next_.fetch_add(1, std::memory_order_relaxed);
    if (id >= capacity_) return std::nullopt;
    Slot& s = slots_[id];
    s.kind = kind;
    s.fate = fate;
    s.depth = static_cast<std::uint8_t>(depth);
    // release: the fields above are seen by whoever sees the id as created (the watchdog).
    s.created.store(true, std::memory_order_release);
    return static_cast<std::uint32_t>(id);
  }

  void started(std::uint32_t id) {
    slots_[id].runs.fetch_add(1, std::memory_order_relaxed);
    progress_.fetch_add(1, std::memory_order_relaxed);
  }
  void finished(std::uint32_t id) {
    slots_[id].finished.fetch_add(1, std::memory_order_relaxed);
    progress_.fetch_add(1, std::memory_order_relaxed);
  }
  // An id taken but never given to any work (the budget ran out before its sibling's): it counts
  // as dropped, as it must.
  void unused(std::uint32_t id) {
    slots_[id].fate = Fate::drop;
    dropped(id);
  }
  void dropped(std::uint32_t id) {
    slots_[id].drops.fetch_add(1, std::memory_order_relaxed);
    progress_.fetch_add(1, std::memory_order_relaxed);
  }

  // Whether the unit has run once and finished, for a check where its caller must have seen it
  // finish (the caller's synchronization orders these relaxed reads).
  bool ran_once(std::uint32_t id) const {
    return slots_[id].runs.load(std::memory_order_relaxed) == 1 &&
           slots_[id].finished.load(std::memory_order_relaxed) == 1;
  }

  std::uint64_t progress() const { return progress_.load(std::memory_order_relaxed); }
  std::size_t used() const { return std::min(next_.load(std::memory_order_relaxed), capacity_); }

  // After the program: the first violation, or an empty string. Call once no work is in flight.
  std::string verify() const {
    for (std::size_t id = 0; id < used(); ++id) {
      const Slot& s = slots_[id];
      const auto runs = s.runs.load(std::memory_order_relaxed);
      const auto drops = s.drops.load(std::memory_order_relaxed);
      const auto done = s.finished.load(std::memory_order_relaxed);
      std::string problem;
      if (runs + drops != 1) {
        problem = "ran " + std::to_string(runs) + " time(s), dropped " + std::to_string(drops) +
                  " time(s) (exactly one of the two expected)";
      } else if (runs == 1 && s.fate == Fate::drop) {
        problem = "ran, but it must have been dropped";
      } else if (drops == 1 && s.fate == Fate::run) {
        problem = "dropped without running, but it must run";
      } else if (done != runs) {
        problem = "started " + std::to_string(runs) + " time(s), finished " + std::to_string(done);
      }
      if (!problem.empty()) {
        return "work #" + std::to_string(id) + " (" + kind_name(s.kind) + ", depth " +
               std::to_string(s.depth) + ") " + problem;
      }
    }
    return {};
  }

  // For the watchdog: the units that started and have not finished, and how many were created but
  // have not started (queued, or waiting to be dropped). Racy reads, for a report only.
  std::string in_flight(std::size_t max_listed) const {
    std::string running;
    std::size_t listed = 0, running_count = 0, waiting = 0;
    for (std::size_t id = 0; id < used(); ++id) {
      const Slot& s = slots_[id];
      if (!s.created.load(std::memory_order_acquire)) continue;
      const auto runs = s.runs.load(std::memory_order_relaxed);
      const auto done = s.finished.load(std::memory_order_relaxed);
      const auto drops = s.drops.load(std::memory_order_relaxed);
      if (runs > done) {
        ++running_count;
        if (listed++ < max_listed) {
          running += "\n    running: #" + std::to_string(id) + " " + kind_name(s.kind) +
                     " at depth " + std::to_string(s.depth);
        }
      } else if (runs == 0 && drops == 0) {
        ++waiting;
      }
    }
    return std::to_string(running_count) + " unit(s) running, " + std::to_string(waiting) +
           " created but not started" + running;
  }

 private:
  struct Slot {
    std::atomic<std::uint32_t> runs{0}, finished{0}, drops{0};
    std::atomic<bool> created{false};
    Kind kind = Kind::root;
    Fate fate = Fate::run;
    std::uint8_t depth = 0;
  };

  const std::size_t capacity_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<std::size_t> next_{0};
  std::atomic<std::uint64_t> progress_{0};
};

// Move-only: the unit's claim to run once. Destroyed unpunched, it records a drop; punched twice
// (the same callable run twice), it records two runs.
class Ticket {
 public:
  Ticket(WorkLedger& ledger, std::uint32_t id) noexcept : ledger_(&ledger), id_(id) {}
  Ticket(Ticket&& other) noexcept
      : ledger_(std::exchange(other.ledger_, nullptr)), id_(other.id_), punched_(other.punched_) {}
  Ticket& operator=(Ticket&&) = delete;
  Ticket(const Ticket&) = delete;
  ~Ticket() {
    if (ledger_ != nullptr && !punched_) ledger_->dropped(id_);
  }
  // Marks the start of a run; returns the id for WorkLedger::finished().
  std::uint32_t punch() {
    punched_ = true;
    ledger_->started(id_);
    return id_;
  }
  std::uint32_t id() const noexcept { return id_; }

 private:
  WorkLedger* ledger_;
  std::uint32_t id_;
  bool punched_ = false;
};

}  // namespace wslab::fuzz
