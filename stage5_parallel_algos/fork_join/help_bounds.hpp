// How much a waiting thread may help with foreign work. A waiter that helps runs an arbitrary
// task on top of its waiting frame (try_run_one()); that task may itself wait and help, and so
// on: without a bound, a 1-thread pool with a backlog of waiting tasks nests them all on one
// stack. Two bounds stop that, both per thread:
//   - help depth: at most kMaxHelpDepth foreign frames nested on one thread;
//   - stack headroom: no helping once more than half of the thread's stack is in use
//     (stack_room.hpp).
// The bounds guard the stack against foreign work only. A waiter's own unstarted work is no
// foreign work, is never counted, and needs no bound: the waiter runs it whatever its depth,
// wherever it is queued (a task group's callables and what its frames left above the group's mark,
// join's forked half), on a fresh stack if need be. Past either bound it takes nothing else; then
// it spins, and sleeps until its work, started on other threads, is done. So the bounds never turn
// a structured program (each wait only for work the waiter created) into a hang: whatever such a
// waiter cannot run has started on another thread, whose later frames wait, by the same rule,
// only for work they can get done.
#pragma once

#include <cstddef>

#include "../../common/thread_pool.hpp"
#include "stack_room.hpp"
#include "thread_record.hpp"

namespace wslab {

// Foreign tasks nested on one thread's stack by helping. Deep enough that helping keeps every
// worker busy in practice (a helper rarely nests more than a few levels), small enough that even
// tasks with large frames cannot exhaust a stack through it.
inline constexpr std::size_t kMaxHelpDepth = 64;

// Foreign tasks currently nested on this thread by helping (0 outside any wait).
inline std::size_t current_help_depth() noexcept {
  return detail::this_fork_join_thread.help_depth;
}

// True when this thread may run one more foreign task on top of its current stack.
inline bool help_allowed() noexcept {
  return detail::this_fork_join_thread.help_depth < kMaxHelpDepth &&
         detail::stack_pointer() > detail::this_thread_stack_floors().help_floor;
}

// Runs run() as one more foreign frame on this thread's stack: counted in the help depth while it
// runs (also if it throws). The caller checks help_allowed() first.
template <class Run>
decltype(auto) run_as_helper(Run&& run) {
  ++detail::this_fork_join_thread.help_depth;
  struct Leave {
    ~Leave() { --detail::this_fork_join_thread.help_depth; }
  } leave;
  return run();
}

// Runs one queued task of `pool` as a (counted) helper, if the bounds allow it. For a thread
// that the pool's destructor waits for (one of its workers).
inline bool help_once(IThreadPool& pool) {
  if (!help_allowed()) return false;
  return run_as_helper([&] { return pool.try_run_one(); });
}

// The same, for any thread, with the pool reached through its lifetime: inside a visit
// (PoolVisit, thread_pool.hpp), so that the pool is not freed under the call; not at all once the
// pool is gone or its destructor has drained it (there is nothing left to run).
inline bool help_once(IThreadPool& pool, const PoolLifetime& lifetime) {
  if (!help_allowed()) return false;
  PoolVisit visit(lifetime);
  return visit && run_as_helper([&] { return pool.try_run_one(); });
}

}  // namespace wslab
