// The scheduler as the layers above it see it: fork_join/, futures/ and algorithms/ include this
// header and no other of scheduler/. What they use, and nothing more:
//   - Job and JobRef (job.hpp): what a deque holds; fork-join's jobs live in the joiner's frame;
//   - the WorkerQueue concept (worker_queue.hpp): a worker's own deque, looked up once per join;
//   - WorkerContext (worker_context.hpp): the scheduler worker the calling thread is, if any;
//   - ForkJoinHost (fork_join_host.hpp): is this IThreadPool a scheduler, asked from outside it;
//   - Scheduler::ForkJoinHandle (scheduler.hpp): everything else fork-join asks of a scheduler,
//     through fork_join/pool_handle.hpp's one handle type; the guest seat (guest_seat.hpp) is
//     part of its answers.
// The scheduler's internals (its deques, injector, parking lot, node caches) stay behind these.
#pragma once

#include "fork_join_host.hpp"
#include "guest_seat.hpp"
#include "job.hpp"
#include "scheduler.hpp"
#include "worker_context.hpp"
#include "worker_queue.hpp"
