// Frames built in the split deque's slots, as WorkerRef::join builds them, forked the way join
// forks against a thief that runs them in place (one thief: with the owner, a thread per core
// of a two-core machine, so that an owner waiting for its thief does not wait for a core too;
// split_deque_test.cpp's job stress races two thieves). Shared by split_deque_test.cpp (the shipped
// deque) and weakened_split_deque_share_test.cpp (a deque whose share_pushed() is relaxed, which
// ThreadSanitizer must catch).
#pragma once

#include <atomic>
#include <cstdint>
#include <new>
#include <thread>
#include <vector>

#include "stage5_parallel_algos/scheduler/job.hpp"
#include "stage5_parallel_algos/scheduler/split_deque.hpp"

namespace wslab::test {

// A frame the owner builds in a slot with plain stores (its id and a check of it); the thief that
// runs it in place reads the id, works a while (thief_work relaxed increments: with a microsecond
// or so, a slot reused under the thief shows), reads the check, counts the id's run and sets
// `done`, its last touch of the slot. The owner counts the frames it takes back with little work.
struct SlotFrame final : sched::Job {
  SlotFrame(std::uint64_t frame_id, std::vector<std::atomic<int>>& run_counts,
            std::atomic<std::uint64_t>& torn_count, int work) noexcept
      : Job(&run),
        id(frame_id),
        check(~frame_id),
        thief_work(work),
        runs(&run_counts),
        torn(&torn_count) {}
  // A thief's run: counts the frame with the thieves' pause between its reads.
  static void run(Job& self) noexcept {
    auto& frame = static_cast<SlotFrame&>(self);
    frame.count(frame.thief_work);
  }
  static constexpr int kOwnerWork = 16;
  // Reads the id, spends `work` relaxed increments, reads the check, counts, sets `done`.
  void count(int work) noexcept {
    const std::uint64_t seen = id;
    std::atomic<std::uint64_t> spent{0};
    for (int i = 0; i < work; ++i)
      spent.fetch_add(1, std::memory_order_relaxed);
    if (check != ~seen || seen >= runs->size()) {
      torn->fetch_add(1, std::memory_order_relaxed);
    } else {
      (*runs)[seen].fetch_add(1, std::memory_order_relaxed);
    }
    done.store(true, std::memory_order_release);
  }
  std::uint64_t id;
  std::uint64_t check;
  int thief_work;
  std::vector<std::atomic<int>>* runs;
  std::atomic<std::uint64_t>* torn;
  std::atomic<bool> done{false};
};
static_assert(sched::fits_job_slot<SlotFrame>);

struct FramesOutcome {
  std::uint64_t not_once = 0;  // ids not run exactly once
  std::uint64_t torn = 0;      // frames whose contents a thief found wrong
  bool left_shared = false;    // the deque still shares something at the end
};

// Whether the owner frees a stolen frame's slot only once its thief is done (the rule), or at once
// (a deliberately broken owner, for the test that shows the rule matters).
enum class FreeStolenSlot { after_thief, at_once };

// `trees` trees of `depth` levels of forks: each fork builds its frame in the next slot (or, the
// deque full, runs it at once), forks its a-subtree, then takes the frame back (take_back_built()
// and take_back() in turn) and runs it, or
// waits until its thief is done and frees the slot. Invariant: every frame runs exactly once,
// intact.
template <class Deque>
FramesOutcome nested_frames_against_a_thief(std::uint64_t trees, int depth, int thief_work,
                                            FreeStolenSlot free = FreeStolenSlot::after_thief) {
  Deque deque(64);
  const std::size_t per_tree = (std::size_t{1} << depth) - 1;
  std::vector<std::atomic<int>> runs(trees * per_tree);
  std::atomic<std::uint64_t> torn{0};
  std::uint64_t next = 0;
  std::atomic<bool> stop{false};
  auto thief = [&] {
    while (!stop.load(std::memory_order_relaxed)) {
      if (sched::Job* job = deque.steal()) job->execute();
    }
  };
  std::thread t1(thief);
  auto fork = [&](auto& self, int d) -> void {
    if (d == 0) return;
    const std::uint64_t id = next++;
    void* slot = deque.next_slot();
    if (slot == nullptr) {
      SlotFrame(id, runs, torn, thief_work).count(SlotFrame::kOwnerWork);
      self(self, d - 1);
      self(self, d - 1);
      return;
    }
    auto* frame = ::new (slot) SlotFrame(id, runs, torn, thief_work);
    deque.push_built(slot);
    self(self, d - 1);
    // Every other frame by the index its slot names (WorkerRef::join's), the others by the head.
    if (id % 2 == 0 ? deque.take_back_built(frame) : deque.take_back(frame)) {
      frame->count(SlotFrame::kOwnerWork);
    } else {
      while (free == FreeStolenSlot::after_thief && !frame->done.load(std::memory_order_acquire))
        std::this_thread::yield();
      deque.release_stolen();
    }
    self(self, d - 1);
  };
  for (std::uint64_t t = 0; t < trees; ++t)
    fork(fork, depth);
  stop.store(true, std::memory_order_relaxed);
  t1.join();
  FramesOutcome outcome;
  for (const std::atomic<int>& r : runs) {
    if (r.load() != 1) ++outcome.not_once;
  }
  outcome.torn = torn.load();
  outcome.left_shared = !deque.nothing_shared();
  return outcome;
}

}  // namespace wslab::test
