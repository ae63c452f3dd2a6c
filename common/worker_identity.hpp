// What the calling thread is, in one thread-local record: which pool, if any, it works for, which
// pools' tasks it is running, and whose blocked work it continues. Every pool asks this to tell a
// recursive submission (from one of its own workers) from an external one, and to refuse calls
// that would make a task wait for itself.
#pragma once

#include <cstddef>

namespace wslab {

class IThreadPool;
class PoolVisit;
struct RunningTask;
struct StandIn;

// The thread's role as a worker.
struct WorkerIdentity {
  const void* pool = nullptr;  // the pool this thread is a worker of; nullptr for other threads
  std::size_t index = 0;       // the worker's index in that pool
  void* state = nullptr;       // the pool's own per-worker record (e.g. stage 3's queue pointer)
  // Set when the pool is destroyed from inside one of this thread's tasks: the worker loop must
  // return as soon as that task ends, without touching the (gone) pool again.
  bool orphaned = false;
};

// The whole record. The worker role is its base, so that a pool reads this_thread_identity.index
// and a role saved and restored (stage 5's guest seat) leaves the other two lists alone.
struct ThreadIdentity : WorkerIdentity {
  const RunningTask* running_task = nullptr;  // innermost first; see RunningTaskScope
  const StandIn* stands_in = nullptr;         // see BlockedThreadRole
  PoolVisit* visits = nullptr;                // innermost first; see PoolVisit (thread_pool.hpp)
  // The pool that a task running on this thread has just destroyed (drain_and_join(),
  // pool_lifecycle.hpp): the code that ran the task must return without touching it. Read only
  // right after a task that run_counted_task() ran, which clears it first.
  const IThreadPool* destroyed_pool = nullptr;

  // Takes on `role` (a worker's, or none), keeping what the thread runs and stands in for.
  void assume(const WorkerIdentity& role) noexcept { static_cast<WorkerIdentity&>(*this) = role; }
};

// Constant-initialised and trivially destructible, so reading it costs a TLS-relative load and no
// init guard.
inline thread_local ThreadIdentity this_thread_identity{};

inline bool is_worker_of(const void* pool) noexcept {
  return this_thread_identity.pool == pool;
}

// The pools whose tasks are running on this thread, innermost first: a list through the frames
// of the code that runs them. A worker's own tasks need no entry (is_worker_of() already tells);
// a task run by any other thread does: one taken with try_run_one() from outside the pool, or a
// future's job or a task group's callable run inline by the thread that waits for it. Then
// wait_idle() from inside that task is refused wherever it runs: it would wait for itself.
struct RunningTask {
  const IThreadPool* pool;
  const RunningTask* outer;
  // A task the pool's ledger counts (one taken with try_run_one()), not a piece of one (a join's
  // half, a group's callable, a future's job run by its waiter): only from inside a counted task
  // may the pool's destructor leave that task running (pool_lifecycle.hpp).
  bool counted;
};

// Marks the calling thread as running a task of `pool` for the scope's lifetime: one TLS load and
// two TLS stores. It only records the address: the pool is never dereferenced through it.
class RunningTaskScope {
 public:
  explicit RunningTaskScope(const IThreadPool& pool, bool counted = false) noexcept
      : frame_{&pool, this_thread_identity.running_task, counted} {
    this_thread_identity.running_task = &frame_;
  }
  ~RunningTaskScope() { this_thread_identity.running_task = frame_.outer; }
  RunningTaskScope(const RunningTaskScope&) = delete;
  RunningTaskScope& operator=(const RunningTaskScope&) = delete;

 private:
  RunningTask frame_;
};

// True when the calling thread is inside a task of `pool` that some RunningTaskScope marked.
inline bool running_task_of(const IThreadPool& pool) noexcept {
  for (const RunningTask* t = this_thread_identity.running_task; t != nullptr; t = t->outer) {
    if (t->pool == &pool) return true;
  }
  return false;
}

// How many counted tasks of `pool` (RunningTask::counted) the calling thread is inside, one
// within the other: those its own try_run_one() runs, from outside the pool or on a worker.
inline std::size_t running_counted_tasks_of(const IThreadPool& pool) noexcept {
  std::size_t n = 0;
  for (const RunningTask* t = this_thread_identity.running_task; t != nullptr; t = t->outer) {
    if (t->pool == &pool && t->counted) ++n;
  }
  return n;
}

// A thread may continue the work of another thread that blocks until it ends: stage 5's stack
// guard (stage5_parallel_algos/fork_join/stack_room.hpp) moves deep join recursion to a fresh
// thread. For waiting, the fresh thread is the blocked one: what it runs is still inside the
// blocked thread's tasks, so wait_idle() there would wait for itself just the same. It inherits the
// blocked thread's running-task marks (the frames stay alive while that thread blocks) and records
// whose worker the blocked thread is, as a list, since the fresh thread may block for a third one.
struct StandIn {
  const void* worker_of;  // the blocked thread's this_thread_identity.pool; may be nullptr
  const StandIn* outer;   // what the blocked thread itself stood in for
};

// Taken on the thread about to block, adopted by the thread that continues its work. Must live
// on the blocking thread's stack until the fresh thread has ended.
class BlockedThreadRole {
 public:
  BlockedThreadRole() noexcept
      : stand_in_{this_thread_identity.orphaned ? nullptr : this_thread_identity.pool,
                  this_thread_identity.stands_in},
        running_(this_thread_identity.running_task),
        visits_(this_thread_identity.visits) {}
  BlockedThreadRole(const BlockedThreadRole&) = delete;
  BlockedThreadRole& operator=(const BlockedThreadRole&) = delete;
  // On the fresh thread, first thing. Not its worker identity: the thread is no worker (what it
  // submits is an external submission), it only must not wait for what the blocked one runs.
  // Its visits too: a pool destroyed on the fresh thread must not wait for the visits the blocked
  // thread holds, which end only after the fresh thread does.
  void adopt() const noexcept {
    this_thread_identity.stands_in = &stand_in_;
    this_thread_identity.running_task = running_;
    this_thread_identity.visits = visits_;
  }

 private:
  StandIn stand_in_;
  const RunningTask* running_;
  PoolVisit* visits_;
};

// True when the calling thread continues, directly or through others, the work of a blocked
// worker of the pool whose complete object is at `pool_key` (the address every pool passes to
// WorkerThreads::start).
inline bool stands_in_for_worker_of(const void* pool_key) noexcept {
  for (const StandIn* s = this_thread_identity.stands_in; s != nullptr; s = s->outer) {
    if (s->worker_of == pool_key) return true;
  }
  return false;
}

}  // namespace wslab
