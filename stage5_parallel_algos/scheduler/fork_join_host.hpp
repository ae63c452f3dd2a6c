// How fork-join recognises a scheduler from a thread that is not one of its workers (on a worker,
// the thread's WorkerContext, worker_context.hpp, says it): every Scheduler is also a
// ForkJoinHost, so a cross-cast from the pool's interface tells, without this header naming the
// scheduler. Asked once per call of fork-join from outside the pool, never per fork
// (fork_join/pool_handle.hpp, with_fork_join_pool()).
#pragma once

#include "../../common/thread_pool.hpp"

namespace wslab::sched {

struct ForkJoinHost {};

// The pool as a ForkJoinHost, or nullptr for a pool that is none. A cross-cast from the pool's
// interface to this one, so it needs the pool's RTTI.
inline const ForkJoinHost* fork_join_host(IThreadPool& pool) noexcept {
  return dynamic_cast<const ForkJoinHost*>(&pool);
}

}  // namespace wslab::sched
