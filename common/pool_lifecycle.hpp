// Starting and stopping a pool's workers: the same protocol in every stage, so it lives here once.
// A pool supplies what differs: how to run one queued task on the calling thread (its
// try_run_one, plus anything it must settle first) and how to wake every sleeping worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <thread>
#include <utility>

#include "task_ledger.hpp"
#include "worker_threads.hpp"

namespace wslab {

// Starts `count` workers running body(i). If they cannot all be started (a stack size the system
// refuses, a thread that cannot be created), the ones that started are made to exit (nothing is in
// flight yet, so the pool counts as drained at once) and joined, and the exception propagates out
// of the pool's constructor.
template <class Body, class WakeAll>
void start_workers(WorkerThreads& workers, TaskLedger& ledger, const void* pool, std::size_t count,
                   const PoolOptions& options, Body&& body, WakeAll&& wake_all) {
  try {
    workers.start(pool, count, options, std::forward<Body>(body));
  } catch (...) {
    ledger.begin_shutdown(0);
    wake_all();
    workers.join_all();
    throw;
  }
}

// How many of `pool`'s own tasks the calling thread is inside, so that its destructor, called
// here, must not wait for them: the task a worker's loop runs, and every task its try_run_one()
// runs within it, or on any other thread. For a pool whose workers run every task either from
// their loop or through try_run_one() (stages 1 to 4); stage 5's workers also run tasks while
// they wait, and count them themselves.
inline std::int64_t own_tasks_here(const IThreadPool& pool) noexcept {
  return (is_worker_of(&pool) ? 1 : 0) + static_cast<std::int64_t>(running_counted_tasks_of(pool));
}

// The destructor: close the gate to external submissions, let every queued task (and every task
// those submit) run, wake the sleepers so that they see the pool drained and leave, join them,
// close the pool to visits (PoolVisit) and wait for those still open, and report an exception
// nobody collected. Called from inside `own_tasks` of the pool's own tasks
// (own_tasks_here(), or the pool's own count), the destroying thread prints a diagnostic and
// cannot block: it may be the only worker left, so it drains by running tasks itself
// (`help_once()` returns false when it found none; yielding rather than sleeping keeps this rare
// path simple, and it ends when the last other task does), until only its own tasks remain. A
// destroying worker's thread is then detached by join_all() instead of joined; on any thread,
// what ran the destroying task learns that the pool is gone (ThreadIdentity::destroyed_pool) and
// returns without touching it.
template <class HelpOnce, class WakeAll>
void drain_and_join(const IThreadPool& pool, std::int64_t own_tasks, TaskLedger& ledger,
                    WorkerThreads& workers, HelpOnce&& help_once, WakeAll&& wake_all) {
  const std::string_view pool_name = pool.name();
  const bool from_own_task = own_tasks > 0;
  if (from_own_task) report_destroyed_from_own_task(pool_name);
  ledger.begin_shutdown(own_tasks);
  if (from_own_task) {
    while (!ledger.drained()) {
      if (!help_once()) std::this_thread::yield();
    }
  } else {
    ledger.wait_drained();
  }
  // An outside submitter whose task has already run (and perhaps destroyed the pool) may still
  // be on its way to waking a worker: nothing is freed before it has left submit().
  ledger.wait_out_submitters();
  // Likewise a thread that reached the pool through a visit (PoolVisit: a future's waiter that
  // helps with try_run_one(), still completing the task it ran). Visits are admitted while the
  // pool drains, so its helpers go on helping; once drained it admits none.
  pool.close_to_visits();
  pool.wait_out_visits();
  wake_all();  // drained() now holds: every sleeping worker wakes, sees it and leaves
  workers.join_all();
  ledger.report_unobserved_errors(pool_name);
  if (from_own_task) this_thread_identity.destroyed_pool = &pool;
}

}  // namespace wslab
