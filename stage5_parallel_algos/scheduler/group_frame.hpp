// A task group's small callable written into its home worker's frame deque (frame_deque.hpp;
// README.md, step 'Group frames'): no node to take, fill and give back, no pointer to follow.
//
// A frame's words: [0] the function that runs it, [1] its group, [2, 8) the callable's bytes, so a
// callable of up to 48 bytes fits. Only a callable the frame can hold as plain bytes goes there
// (trivially copyable and trivially destructible): thieves copy frames before they own them, and a
// frame is never destroyed. The run function copies the callable out of the frame before it calls
// it: the owner runs a frame in its slot, which the callable's own pushes may rewrite.
//
// The run function takes the same `how` as a group job (job.hpp): `here` from the loop of a wait
// on the frame's home (`own_wait` naming that wait), `elsewhere` anywhere else. FrameJob carries a
// copy of a frame as a Job, for the paths that hand Jobs around (the worker's loop, a thief's
// steal): it runs the frame `elsewhere`.
#pragma once

#include <cstddef>
#include <cstdint>

#include "frame_deque.hpp"
#include "job.hpp"
#include "steal_gate.hpp"

namespace wslab::sched {

using FrameDequeOfWorker = BasicFrameDeque<GatedFences>;
// `lead`: only from the waiter's loop, run `here`: the frames after this one may be run by this
// function too (Scheduler::run_frames_of(), README.md, step 'Runs of one frame function').
using FrameRunFn = void (*)(const FrameSlot&, GroupJob::Ran, const void* own_wait,
                            bool lead) noexcept;

inline constexpr std::size_t kFrameHeaderWords = 2;
inline constexpr std::size_t kFrameCallableBytes =
    (FrameDequeOfWorker::kWords - kFrameHeaderWords) * sizeof(std::uint64_t);

// Runs the frame in `slot` (the owner's pop, in its slot; a FrameJob's copy).
inline void run_frame(const FrameSlot& slot, GroupJob::Ran how, const void* own_wait,
                      bool lead = false) noexcept {
  reinterpret_cast<FrameRunFn>(slot[0])(slot, how, own_wait, lead);
}

// A copy of a frame, run as a Job: `elsewhere`. The holder is reused by the next steal or pop of
// the same thread, which may come while the frame's callable runs: the run function has copied
// what it needs by then, and nothing reads the holder after the run function returns.
class FrameJob final : public Job {
 public:
  FrameJob() noexcept : Job(&run) {}
  FrameSlot& slot() noexcept { return frame_; }
  // Takes a copy of the owner's popped frame.
  void hold(const FrameSlot& from) noexcept { copy_frame(from, frame_); }
  static bool is_frame_job(const Job& job) noexcept { return job.executes(&run); }

 private:
  static void run(Job& self) noexcept {
    run_frame(static_cast<FrameJob&>(self).frame_, GroupJob::Ran::elsewhere, nullptr);
  }
  FrameSlot frame_{};
};

}  // namespace wslab::sched
