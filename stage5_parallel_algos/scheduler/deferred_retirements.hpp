// A worker's unpaid retirements (README.md, step 'Node cache'): a worker does not subtract each
// task it runs from the ledger's shared count at once. It owes them, pays them in one RMW when it
// runs dry, and meanwhile cancels one against each task it spawns (the count stays what it would
// be had it retired and admitted). Deferring a decrement only keeps the count above the truth,
// never below, so nothing can be declared idle early; and the shared count's line stays put
// while a worker runs a burst of its own spawns. Owner only.
#pragma once

#include <cstdint>
#include <utility>

#include "../../common/task_ledger.hpp"

namespace wslab::sched {

class DeferredRetirements {
 public:
  // deferred == false: every completion is retired at once, every spawn admitted.
  explicit DeferredRetirements(bool deferred) noexcept : deferred_(deferred) {}

  // Counts a task this worker spawns.
  void admit(TaskLedger& ledger) noexcept {
    if (owed_ > 0) {
      --owed_;
    } else {
      ledger.admit_recursive();
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

 private:
  std::int64_t owed_ = 0;
  bool deferred_;
};

}  // namespace wslab::sched
