// How fork-join finds, on the calling thread, the scheduler worker it runs on: every worker of
// a Scheduler (and a guest while seated) publishes its per-worker record in a thread-local
// pointer, as a WorkerContext. join checks that the context belongs to the pool it was given,
// then reaches the worker's own deque through it (Scheduler::ForkJoinHandle::with_worker_queue())
// with no virtual call: one TLS load and one compare per fork. Any pool that publishes nothing here
// (the other stages, the lab's pools) takes fork-join's generic path.
#pragma once

#include "../../common/config.hpp"
#include "../../common/thread_pool.hpp"

namespace wslab::sched {

// The head of a scheduler's per-worker record (worker.hpp).
struct WorkerContext {
  IThreadPool* pool;  // the scheduler this thread works for
};

// The context of every thread that works for no scheduler: its pool is nullptr, which no pool's
// address is. The thread-local pointer below is never null, so that a lookup compares the pool
// without first testing the pointer: two instructions of every fork by pool.join.
inline constinit WorkerContext kNoWorker{nullptr};

// The calling thread's context, &kNoWorker off every scheduler. Constant-initialised, so reading
// it costs a TLS-relative load and no init guard.
inline thread_local WorkerContext* this_thread_worker = &kNoWorker;

// this_thread_worker, which the compiler is told is never null: a caller that compares it with a
// record and then tests the answer for null tests nothing more.
[[gnu::always_inline]] inline WorkerContext* this_thread_context() noexcept {
  WorkerContext* ctx = this_thread_worker;
  WSLAB_ASSERT(ctx != nullptr);
  if (ctx == nullptr) __builtin_unreachable();
  return ctx;
}

// Whether the calling thread works for some scheduler (as a worker, or seated as its guest).
inline bool on_some_worker() noexcept {
  return this_thread_worker->pool != nullptr;
}

// The calling thread's context if it works for `pool`, else nullptr.
[[gnu::always_inline]] inline WorkerContext* worker_context_of(const IThreadPool& pool) noexcept {
  WorkerContext* ctx = this_thread_context();
  return ctx->pool == &pool ? ctx : nullptr;
}

}  // namespace wslab::sched
