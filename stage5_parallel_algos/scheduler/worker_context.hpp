// How fork-join finds, on the calling thread, the scheduler worker it runs on: every worker of
// a Scheduler (and a guest while seated) publishes its per-worker record in a thread-local
// pointer, as a WorkerContext. join checks that the context belongs to the pool it was given,
// then reaches the worker's own deque through it (Scheduler::ForkJoinHandle::with_worker_queue())
// with no virtual call: one TLS load and one compare per fork. Any pool that publishes nothing here
// (the other stages, the lab's pools) takes fork-join's generic path.
#pragma once

#include "../../common/thread_pool.hpp"

namespace wslab::sched {

// The head of a scheduler's per-worker record (worker.hpp).
struct WorkerContext {
  IThreadPool* pool;  // the scheduler this thread works for
};

// The calling thread's context, or nullptr off every scheduler. Constant-initialised, so reading
// it costs a TLS-relative load and no init guard.
inline thread_local WorkerContext* this_thread_worker = nullptr;

// The calling thread's context if it works for `pool`, else nullptr.
[[gnu::always_inline]] inline WorkerContext* worker_context_of(const IThreadPool& pool) noexcept {
  WorkerContext* ctx = this_thread_worker;
  return ctx != nullptr && ctx->pool == &pool ? ctx : nullptr;
}

}  // namespace wslab::sched
