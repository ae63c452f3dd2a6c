// What fork-join needs from a worker's own queue (join.hpp, the timed leaves of
// range_splitter.hpp), as a concept: Scheduler::LocalQueue models it for every knob
// setting. A handle is looked up once per join and passed by value (two pointers), so
// that the push and the pop of a fork inline to a handful of instructions.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>

#include "job.hpp"
#include "worker_context.hpp"

namespace wslab::sched {

// Where a waiter's own work begins on its worker's Chase-Lev deque: the lowest index at which its
// home worker (the thread that waits) pushed work of the waiter's. A wait finishes only once that
// work is done, and anything the home worker pushed above it was pushed while the waiter's frame
// was live: its own work, or work of frames it called, which a structured program waits for
// before it returns. So the waiter may run whatever lies at or above `low` on its own deque,
// without counting it as help, and nothing below (README.md, step 'Waits without help bounds').
// Written by the home worker's pushes only (pushes on other threads leave it alone) and read by a
// waiter on that thread; reset by the waiter after a round, when nothing of the round runs: no
// atomics.
//
// A group made on its home worker may queue its callables there as group jobs (job.hpp; README.md,
// step 'Group jobs'): the home counts its pushes, and a waiter on that thread counts those its own
// wait runs with plain adds (a waiter on another thread hands them all in).
//
// Its small callables may go to the home's frame deque instead (group_frame.hpp; README.md, step
// 'Group frames'): `frame_low` is the same mark on that deque. `frame_home` is where they may go:
// the home while the step is on, nullptr for the rest of a round that found the frame deque at its
// cap (`frames_full`), so that one compare with the calling thread's context asks both whether
// frames are allowed and whether the caller is at home (step 'One look per push').
struct OwnWorkMark {
  static constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
  const WorkerContext* home = nullptr;  // the worker whose deque `low` indexes; nullptr: none
  std::int64_t low = kNone;        // kNone: the home worker has pushed nothing of ours this round
  std::int64_t frame_low = kNone;  // the same on the home's frame deque
  bool group_jobs = false;         // the step is on (and the group was made on a worker)
  bool frames_full = false;        // this round found the frame deque at its cap
  // `home` when step 'Group frames' is on and the group was made on a worker, save in a round that
  // found the cap; else nullptr.
  const WorkerContext* frame_home = nullptr;
};

template <class Q>
concept WorkerQueue =
    std::copyable<Q> && requires(Q q, const Q cq, Job& job, Job* popped, void* slot,
                                 typename Q::Place place, std::uint32_t round) {
      // Pushes a fork's job onto one of the worker's own deques, where idle workers may steal it
      // (waking a sleeper if it shares it and nobody searches); says which deque.
      { q.push(job) } -> std::same_as<typename Q::Place>;
      // The same for a job built in the split deque's own slot (README.md, step 'Frames in the
      // slot'): fork_slot() is where to build one that fits a JobSlot, or nullptr (the deque is
      // full, or the step is off); push_built(slot) then pushes it.
      { q.fork_slot() } noexcept -> std::same_as<void*>;
      { q.push_built(slot) } -> std::same_as<typename Q::Place>;
      // From the deque push() named, for the job pushed there: that job if it is still there,
      // nullptr if it was stolen, or (the Chase-Lev deque only) a job pushed above it and left
      // there.
      { q.pop(place, job) } noexcept -> std::same_as<Job*>;
      // After pop() returned nullptr and the job's thief has finished with it.
      { q.release_stolen(place) } noexcept;
      // Any job: the worker's own deque, the injector, a steal; nullptr if none.
      { q.find_work() } -> std::same_as<Job*>;
      // Runs a job from pop() or find_work() with the pool's bookkeeping.
      q.run(popped);
      // While a waiting worker looks for work it counts as a searcher (wake-ups are left to it).
      { q.begin_search() } noexcept;
      { q.end_search() } noexcept;
      // A thread searches for work and this worker's deque has none to give it (a hint).
      { cq.thief_waiting() } noexcept -> std::same_as<bool>;
      // How a searcher waits between two scans, round after round; the first kSearchPauseRounds
      // pause on the core, the later ones yield it.
      { Q::search_backoff(round) } noexcept;
      { Q::kSearchPauseRounds } -> std::convertible_to<std::uint32_t>;
    };

}  // namespace wslab::sched
