// The deque of frames (scheduler/frame_deque.hpp): the owner alone, scenario by scenario; the
// window between a thief's CAS and its return, where the owner rewrites the slot it took, with
// the broken copy-after-claim caught; and an owner that pushes and pops against two thieves, every
// frame taken exactly once with all of its words intact, through wrap-arounds and growth.
// Buffers given back (step 'Frames given back'): an empty deque returns to a small buffer, one
// with frames keeps its own, a buffer a thief is copying from stays until the thief is done (the
// broken variant that frees it anyway caught), and the stress again with the owner giving back.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "stage5_parallel_algos/scheduler/frame_deque.hpp"

namespace {

using wslab::LeFences;
using wslab::StealOutcome;
using wslab::sched::BasicFrameDeque;
using wslab::sched::FrameCopy;
using wslab::sched::FrameDeque;
using wslab::sched::FrameFree;
using wslab::sched::NoClaimHook;

// Frame `id`: every word derived from the id, so a torn or stale copy shows.
constexpr std::uint64_t word_of(std::uint64_t id, std::size_t w) {
  return id * 0x9E3779B97F4A7C15ull + w * 0x632BE59BD9B4E019ull + 1;
}
std::array<std::uint64_t, FrameDeque::kWords> frame_of(std::uint64_t id) {
  std::array<std::uint64_t, FrameDeque::kWords> f{};
  f[0] = id;
  for (std::size_t w = 1; w < f.size(); ++w)
    f[w] = word_of(id, w);
  return f;
}
// The id of an intact frame, or ~0 when a word does not belong with the first.
template <class Words>
std::uint64_t id_if_intact(const Words& f) {
  const std::uint64_t id = f[0];
  for (std::size_t w = 1; w < FrameDeque::kWords; ++w)
    if (f[w] != word_of(id, w)) return ~std::uint64_t{0};
  return id;
}

TEST(FrameDeque, OwnerAloneGetsEveryFrameBackNewestFirst) {
  FrameDeque deque(4);
  EXPECT_EQ(deque.pop(), nullptr);
  for (std::uint64_t id = 0; id < 3; ++id)
    deque.push(frame_of(id));
  EXPECT_EQ(deque.size(), 3);
  for (std::uint64_t id = 3; id-- > 0;) {
    const auto* slot = deque.pop();
    ASSERT_NE(slot, nullptr);
    EXPECT_EQ(id_if_intact(*slot), id);
  }
  EXPECT_EQ(deque.pop(), nullptr);
  EXPECT_TRUE(deque.empty());
}

TEST(FrameDeque, AShortPushWritesOnlyItsWords) {
  FrameDeque deque(2);
  deque.push(frame_of(7));
  deque.push(frame_of(8));
  ASSERT_NE(deque.pop(), nullptr);  // 8, not the last frame: its index is free again
  deque.push(std::array<std::uint64_t, 2>{42, 43});  // same slot: words 2..7 keep frame 8's
  const auto* slot = deque.pop();
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ((*slot)[0], 42u);
  EXPECT_EQ((*slot)[1], 43u);
  for (std::size_t w = 2; w < FrameDeque::kWords; ++w)
    EXPECT_EQ((*slot)[w], word_of(8, w));
  EXPECT_EQ(id_if_intact(*deque.pop()), 7u);
}

TEST(FrameDeque, GrowingKeepsEveryFrameWhole) {
  FrameDeque deque(2);
  for (std::uint64_t id = 0; id < 1000; ++id)
    deque.push(frame_of(id));
  EXPECT_GE(deque.capacity(), 1000u);
  FrameDeque::Slot stolen{};
  ASSERT_EQ(deque.steal(stolen), StealOutcome::success);
  EXPECT_EQ(id_if_intact(stolen), 0u);  // thieves take the oldest
  for (std::uint64_t id = 1000; id-- > 1;) {
    const auto* slot = deque.pop();
    ASSERT_NE(slot, nullptr);
    ASSERT_EQ(id_if_intact(*slot), id);
  }
  EXPECT_EQ(deque.pop(), nullptr);
  EXPECT_EQ(deque.steal(stolen), StealOutcome::empty);
}

// The window after a thief's CAS: top has moved past the slot, so the owner may write over it
// (here it does, at once, from inside the window). A thief that copied before its CAS keeps the
// frame it took; one that copies after it gets the owner's new frame: the broken variant returns a
// frame that is still in the deque, and the one it took is lost.
struct Window {
  std::function<void()>* during = nullptr;
  void operator()() const {
    if (during != nullptr && *during) (*during)();
  }
};
template <FrameCopy Copy>
std::uint64_t frame_a_thief_returns_after_the_owner_rewrote_its_slot() {
  std::function<void()> during;
  BasicFrameDeque<LeFences, Copy, Window> deque(2, {}, Window{&during});
  deque.push(frame_of(1));  // index 0
  deque.push(frame_of(2));  // index 1: the ring of 2 is full
  // Inside the thief's window: top is 1, so index 2 fits, in index 0's slot.
  during = [&] { deque.push(frame_of(3)); };
  FrameDeque::Slot stolen{};
  EXPECT_EQ(deque.steal(stolen), StealOutcome::success);
  EXPECT_EQ(deque.capacity(), 2u) << "the push inside the window must rewrite, not grow";
  return id_if_intact(stolen);
}
TEST(FrameDeque, AThiefKeepsTheFrameItTookWhenTheOwnerRewritesTheSlot) {
  EXPECT_EQ(frame_a_thief_returns_after_the_owner_rewrote_its_slot<FrameCopy::before_claim>(), 1u);
}
TEST(FrameDeque, CopyAfterTheClaimIsCaughtReturningTheOwnersNewFrame) {
  EXPECT_EQ(frame_a_thief_returns_after_the_owner_rewrote_its_slot<FrameCopy::after_claim>(), 3u);
}

// The owner pushes frames 0 to frames - 1 in bursts of 1 to `longest_burst`, pops half of each
// burst, and then calls after_burst(next, take) (next: the frames pushed so far), against two
// thieves that steal until the owner is done and the deque is empty; then checks that each frame
// was taken exactly once and whole. What the owner pops goes to take(id_if_intact(...)).
template <class AfterBurst>
void expect_each_frame_once_against_two_thieves(FrameDeque& deque, std::uint64_t frames,
                                                std::uint64_t longest_burst,
                                                AfterBurst after_burst) {
  std::vector<std::atomic<int>> taken(frames);
  std::atomic<std::uint64_t> torn{0};
  std::atomic<bool> done{false};
  auto take = [&](std::uint64_t id) {
    if (id >= frames) {
      torn.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    taken[id].fetch_add(1, std::memory_order_relaxed);
  };
  auto thief = [&] {
    FrameDeque::Slot f{};
    for (;;) {
      const bool finished = done.load(std::memory_order_acquire);
      const StealOutcome r = deque.steal(f);
      if (r == StealOutcome::success) take(id_if_intact(f));
      if (r == StealOutcome::empty && finished) return;
    }
  };
  std::thread t1(thief), t2(thief);
  std::uint64_t next = 0;
  while (next < frames) {
    const std::uint64_t burst = 1 + next % longest_burst;
    for (std::uint64_t i = 0; i < burst && next < frames; ++i)
      deque.push(frame_of(next++));
    for (std::uint64_t i = 0; i < burst / 2; ++i)
      if (const auto* slot = deque.pop()) take(id_if_intact(*slot));
    after_burst(next, take);
  }
  while (const auto* slot = deque.pop())
    take(id_if_intact(*slot));
  done.store(true, std::memory_order_release);
  t1.join();
  t2.join();
  EXPECT_EQ(torn.load(), 0u) << "a frame was taken with words of another";
  std::uint64_t wrong = 0;
  for (std::uint64_t id = 0; id < frames; ++id)
    if (taken[id].load() != 1) ++wrong;
  EXPECT_EQ(wrong, 0u) << "frames taken zero times or twice";
}

// Invariant: every frame pushed is taken exactly once, by the owner's pop or by one thief's
// steal, and whoever takes it sees all eight of its words. The owner pushes in bursts and pops
// some of each burst, in a small ring (wrap-arounds, growth), against two thieves.
TEST(FrameDeque, EveryFrameIsTakenExactlyOnceAndWholeAgainstTwoThieves) {
  constexpr std::uint64_t kFrames = 200'000;
  FrameDeque deque(4);
  expect_each_frame_once_against_two_thieves(deque, kFrames, 7, [](std::uint64_t, auto&) {});
}

TEST(FrameDeque, AnEmptyGrownDequeGivesBackItsBuffers) {
  FrameDeque deque(4);
  for (std::uint64_t id = 0; id < 20; ++id)
    deque.push(frame_of(id));
  EXPECT_EQ(deque.capacity(), 32u);
  EXPECT_EQ(deque.growths(), 3u);
  EXPECT_EQ(deque.held_slots(), 4u + 8u + 16u + 32u);
  while (deque.pop() != nullptr) {
  }
  EXPECT_TRUE(deque.give_back(4));
  EXPECT_EQ(deque.capacity(), 4u);
  EXPECT_EQ(deque.retired_buffers(), 0u);
  EXPECT_EQ(deque.held_slots(), 4u);
  EXPECT_EQ(deque.growths(), 3u) << "growths count what happened, not what is held";
  // The indices go on where they were; the small buffer serves them.
  for (std::uint64_t id = 100; id < 103; ++id)
    deque.push(frame_of(id));
  EXPECT_EQ(deque.capacity(), 4u);
  FrameDeque::Slot stolen{};
  ASSERT_EQ(deque.steal(stolen), StealOutcome::success);
  EXPECT_EQ(id_if_intact(stolen), 100u);
  for (std::uint64_t id = 103; id-- > 101;) {
    const auto* slot = deque.pop();
    ASSERT_NE(slot, nullptr);
    EXPECT_EQ(id_if_intact(*slot), id);
  }
  EXPECT_EQ(deque.pop(), nullptr);
}

TEST(FrameDeque, ADequeWithFramesKeepsItsBufferAndFreesTheOutgrownOnes) {
  FrameDeque deque(4);
  for (std::uint64_t id = 0; id < 20; ++id)
    deque.push(frame_of(id));
  EXPECT_TRUE(deque.give_back(4));
  EXPECT_EQ(deque.capacity(), 32u) << "frames are never moved by give_back()";
  EXPECT_EQ(deque.retired_buffers(), 0u);
  EXPECT_EQ(deque.held_slots(), 32u);
  for (std::uint64_t id = 20; id-- > 0;) {
    const auto* slot = deque.pop();
    ASSERT_NE(slot, nullptr);
    ASSERT_EQ(id_if_intact(*slot), id);
  }
}

// The window between a thief's load of the buffer's address and its copy: the thief waits there
// until told to go on, or, told to leave, throws out of steal() before it reads anything.
struct ReadWindow {
  // 0: pass; 4: armed; 1: a thief waits; 2: go on; 3: leave.
  std::atomic<int>* state = nullptr;
  void operator()() const {
    if (state == nullptr || state->load() == 0) return;
    state->store(1);
    while (state->load() == 1)
      std::this_thread::yield();
    if (state->load() == 3) throw std::runtime_error("the thief leaves before its copy");
  }
};
template <FrameFree Free>
using WindowedDeque =
    BasicFrameDeque<LeFences, FrameCopy::before_claim, NoClaimHook, Free, ReadWindow>;

// A thief holds the address of a buffer of 2 slots; the owner grows the deque past it and gives
// back: that buffer must stay until the thief has copied from it. Returns whether give_back()
// freed everything while the thief was inside, and (checked variant) what the thief took.
template <FrameFree Free>
bool gives_back_under_a_reading_thief(std::uint64_t& stolen_id) {
  std::atomic<int> state{0};
  WindowedDeque<Free> deque(2, {}, {}, ReadWindow{&state});
  deque.push(frame_of(0));
  deque.push(frame_of(1));
  state.store(4);  // armed: the next thief to load the buffer's address waits
  typename WindowedDeque<Free>::Slot stolen{};
  StealOutcome outcome = StealOutcome::empty;
  std::thread thief([&] {
    try {
      outcome = deque.steal(stolen);
    } catch (const std::runtime_error&) {
    }
  });
  while (state.load() != 1)
    std::this_thread::yield();
  deque.push(frame_of(2));  // the ring of 2 is full: it grows, the thief's buffer retired
  EXPECT_EQ(deque.capacity(), 4u);
  const bool freed = deque.give_back(2);
  const bool freed_all = freed && deque.retired_buffers() == 0;
  // The broken variant has freed the buffer the thief holds: it leaves without reading it.
  state.store(freed_all ? 3 : 2);
  thief.join();
  stolen_id = outcome == StealOutcome::success ? id_if_intact(stolen) : ~std::uint64_t{0};
  return freed_all;
}

TEST(FrameDeque, ABufferAThiefIsCopyingFromIsKeptUntilItIsDone) {
  std::uint64_t stolen_id = 0;
  EXPECT_FALSE(gives_back_under_a_reading_thief<FrameFree::after_readers>(stolen_id));
  EXPECT_EQ(stolen_id, 0u) << "the thief copies the oldest frame from the buffer it holds";
}
TEST(FrameDeque, FreeingWithoutLookingAtReadersIsCaughtFreeingTheThiefsBuffer) {
  std::uint64_t stolen_id = 0;
  EXPECT_TRUE(gives_back_under_a_reading_thief<FrameFree::unchecked>(stolen_id));
}

// After the thief is done, the same deque frees what it kept, and its frames are all there.
TEST(FrameDeque, WhatAThiefHeldIsFreedByTheNextGiveBack) {
  std::atomic<int> state{4};
  WindowedDeque<FrameFree::after_readers> deque(2, {}, {}, ReadWindow{&state});
  deque.push(frame_of(0));
  deque.push(frame_of(1));
  FrameDeque::Slot stolen{};
  std::thread thief([&] { EXPECT_EQ(deque.steal(stolen), StealOutcome::success); });
  while (state.load() != 1)
    std::this_thread::yield();
  deque.push(frame_of(2));
  EXPECT_FALSE(deque.give_back(2));
  EXPECT_EQ(deque.retired_buffers(), 1u);
  state.store(2);
  thief.join();
  EXPECT_EQ(id_if_intact(stolen), 0u);
  state.store(0);
  EXPECT_TRUE(deque.give_back(2));
  EXPECT_EQ(deque.retired_buffers(), 0u);
  for (std::uint64_t id = 3; id-- > 1;) {
    const auto* slot = deque.pop();
    ASSERT_NE(slot, nullptr);
    EXPECT_EQ(id_if_intact(*slot), id);
  }
  EXPECT_EQ(deque.pop(), nullptr);
  EXPECT_TRUE(deque.give_back(2));
  EXPECT_EQ(deque.capacity(), 2u);
}

// Invariant: every frame taken exactly once and whole, as above, while the owner, whenever its
// deque runs empty, gives back to a buffer of 2 slots, so that the next bursts grow it again and
// thieves keep loading buffers that are retired and freed around them (under the sanitizers a
// copy from a freed buffer is an error of its own).
TEST(FrameDeque, EveryFrameIsTakenExactlyOnceWhileTheOwnerGivesBack) {
  constexpr std::uint64_t kFrames = 200'000;
  FrameDeque deque(2);
  std::uint64_t gave_back = 0;
  expect_each_frame_once_against_two_thieves(deque, kFrames, 23,
                                             [&](std::uint64_t next, auto& take) {
                                               if (next % 3 != 0) return;
                                               while (const auto* slot = deque.pop())
                                                 take(id_if_intact(*slot));
                                               gave_back += deque.give_back(2) ? 1 : 0;
                                             });
  EXPECT_TRUE(deque.give_back(2));
  EXPECT_GT(gave_back, 0u);
}

}  // namespace
