// A worker's balance with the ledger: how far the ledger's shared count stands above what this
// worker's tasks alone would make it (README.md, steps 'Node cache' and 'Prepaid admissions').
// A worker does not subtract each task it runs from the count at once: it owes the retirement,
// pays what it owes in one RMW when it runs dry, and meanwhile cancels one debt against each task
// it spawns (the count stays what it would be had it retired and admitted). A spawn with nothing
// to cancel admits a batch of tasks in one RMW, the one spawned and the next ones ahead of time,
// and owes the rest as it owes retirements. Both keep the count above the truth, never below:
// nothing is declared idle early, and the count's line stays put while a worker runs a burst of
// its own spawns or of its own tasks. Owner only.
#pragma once

#include <cstdint>
#include <utility>

#include "../../common/task_ledger.hpp"

namespace wslab::sched {

class DeferredRetirements {
 public:
  // deferred == false: every completion is retired at once, every spawn admitted alone (step
  // 'Node cache' off). Otherwise a spawn with nothing owed admits `admission_batch` (at least 1).
  DeferredRetirements(bool deferred, std::uint32_t admission_batch) noexcept
      : batch_(deferred && admission_batch > 1 ? admission_batch : 1), deferred_(deferred) {}

  // Counts a task this worker spawns.
  void admit(TaskLedger& ledger) noexcept {
    if (owed_ > 0) {
      --owed_;
    } else {
      // The whole batch is in the count before the task that spends its first unit exists; the
      // units not spent yet are owed, and paid when the worker runs dry.
      ledger.admit_recursive(batch_);
      owed_ = batch_ - 1;
    }
  }

  // A task this worker ran (or failed to queue after admit()) is finished. Returns true when
  // that drained the ledger: the caller wakes every sleeper.
  [[nodiscard]] bool retire(TaskLedger& ledger) noexcept {
    if (deferred_) [[likely]] {
      ++owed_;
      return false;
    }
    return ledger.retire(1);
  }

  // Pays what is owed. Returns true when that drained the ledger.
  [[nodiscard]] bool settle(TaskLedger& ledger) noexcept {
    if (owed_ == 0) return false;
    return ledger.retire(std::exchange(owed_, 0));
  }

  // What the count stands above this worker's tasks (for the tests).
  std::int64_t owed() const noexcept { return owed_; }

 private:
  std::int64_t owed_ = 0;
  std::int64_t batch_;
  bool deferred_;
};

}  // namespace wslab::sched
