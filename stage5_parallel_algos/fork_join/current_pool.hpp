// The pool whose task the calling thread is running, for the calls that do not name one:
// TaskGroup() and join(a, b) inside a recursion, as oneTBB's task_group finds its arena and
// Rayon's join its registry, so that a recursive program need not pass the pool down.
//
// Found, innermost first: the pool of the task the thread runs inline (a callable its waiter took
// back, a future's job run by get(), a join on a seat or on a fresh stack: each is marked, in
// worker_identity.hpp's list), else the stage-5 scheduler the thread works for. A worker of any
// other pool names its pool by an untyped address only (worker_identity.hpp), so there the call
// must name the pool. Outside every task the call throws std::logic_error: a pool found by
// guessing could be the wrong one.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "../../common/thread_pool.hpp"
#include "../../common/worker_identity.hpp"
#include "../scheduler/port.hpp"

namespace wslab {

// The pool running the calling thread's current task, or nullptr when it runs none this can name.
inline IThreadPool* current_pool() noexcept {
  // A mark is always inside the worker's own task, so it comes first. Marks hold the pool as
  // const only to promise they do not change it; the pool itself is not const.
  if (this_thread_identity.running_task != nullptr)
    return const_cast<IThreadPool*>(this_thread_identity.running_task->pool);
  return sched::this_thread_worker->pool;  // nullptr off every scheduler
}

namespace detail {
// current_pool(), or the error for `call` (e.g. "wslab::TaskGroup()").
inline IThreadPool& current_pool_for(std::string_view call) {
  if (IThreadPool* pool = current_pool()) return *pool;
  throw std::logic_error(std::string(call) +
                         " without a pool outside a ThreadPool's task: there is no pool to "
                         "find; name it (the overload that takes the pool)");
}
}  // namespace detail

}  // namespace wslab
