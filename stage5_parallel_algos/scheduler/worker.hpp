// One worker's record in a Scheduler (and the guest seat's, which is one more of these):
// its Chase-Lev deque, its split deque for join's forks, and everything only its owner touches. It
// starts with the WorkerContext the thread publishes for fork-join (worker_context.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "../../common/config.hpp"
#include "../../common/stats.hpp"
#include "../../common/thread_pool.hpp"
#include "../../stage4_chase_lev/chase_lev_deque.hpp"
#include "deferred_retirements.hpp"
#include "group_frame.hpp"
#include "job.hpp"
#include "knobs.hpp"
#include "node_depot.hpp"
#include "split_deque.hpp"
#include "steal_gate.hpp"
#include "steal_sessions.hpp"
#include "task_node_cache.hpp"
#include "worker_context.hpp"

namespace wslab::sched {

// Padded: the owner's fields and the deques' indices sit on lines of their own, so a thief's
// reads do not bounce the owner's line (stage 4's lab variant `unpadded` measures what that is
// worth).
struct alignas(kCacheLineSize) Worker : WorkerContext {
  // Thieves steal inside sessions of the gate, so owners' pops fence only while one is open.
  using Deque = ChaseLevDeque<Job*, GatedFences, /*Padded=*/true>;

  Worker(IThreadPool* owner, const SchedulerKnobs& knobs, std::size_t worker_index,
         WorkerCounters* stats, const StealGate& gate, NodeDepot& depot, SmallJobDepot& small_depot)
      : WorkerContext{owner},
        deque(knobs.deque_capacity, GatedFences{&gate}),
        forks(knobs.split_deque, knobs.frames_in_slots),
        frames(knobs.deque_capacity, GatedFences{&gate}),
        counters(stats),
        index(worker_index),
        nodes(knobs.node_cache ? knobs.task_node_cache : 0, knobs.node_depot ? &depot : nullptr),
        small_jobs(knobs.node_cache ? knobs.task_node_cache : 0,
                   knobs.node_depot ? &small_depot : nullptr,
                   knobs.small_group_jobs ? SmallJobBlock::kBytes : sizeof(TaskJob)),
        retirements(knobs.node_cache, knobs.admission_batch),
        rng_state(0x9E3779B97F4A7C15ull * (worker_index + 1)) {}

  std::uint32_t next_random() noexcept {  // xorshift64: cheap victim choice
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return static_cast<std::uint32_t>(rng_state >> 32);
  }

  Deque deque;
  BasicSplitDeque<SplitDequeReclaim::cas, /*Padded=*/true>
      forks;  // join's jobs (README.md, step 'Split deque'); the task nodes go on `deque`
  FrameDequeOfWorker frames;  // small group callables (README.md, step 'Group frames')
  // Owner-only fields below.
  WorkerCounters* counters;  // this worker's line in the pool's counters
  std::size_t index;
  TaskNodeCache nodes;
  SmallJobCache small_jobs;  // small group jobs' blocks (README.md, step 'Small group jobs')
  DeferredRetirements retirements;
  std::uint64_t rng_state;
  // The frame this worker's loop popped or stole last, run as a Job (group_frame.hpp).
  FrameJob frame_job;
  // This worker's session of the steal gate (steal_sessions.hpp); other workers read whether it
  // is open (relaxed), to ask a worker that only forks to close it.
  StealSession session;
  // Step 'Tiny steals' (Scheduler::run_stolen()): whether the job this worker's search found was
  // stolen, the victim of the worker's latest steals plus one (0: none), and how many stolen jobs
  // in a row ran in under the knob's time. Step 'Doubling pauses': how many pauses in a row from
  // that victim ran their whole length (the next lasts 2^tiny_pauses_in_full times the knob);
  // written by this worker alone, atomic only so that tests may read it (relaxed).
  bool stole = false;
  std::size_t tiny_victim = 0;
  std::uint32_t tiny_in_a_row = 0;
  std::atomic<std::uint32_t> tiny_pauses_in_full{0};
  // Step 'Growing owners' (Scheduler::push_own()): no push below this bottom index can grow
  // `deque`; and whether a push is growing it now (written by the owner alone, relaxed; read by
  // thieves that pause on its tiny tasks, as a hint).
  std::int64_t grow_check_at = 0;
  std::int64_t frame_grow_check_at = 0;  // the same for `frames`
  std::atomic<bool> growing{false};
  std::size_t announced_growths = 0;  // growths of `deque` and `frames` announced so (for tests)
  // Task nodes running on this thread now, one inside the other (a task that waits runs others):
  // the pool's destructor, called from the innermost, must not wait for any of them.
  std::uint32_t tasks_running = 0;
};

}  // namespace wslab::sched
