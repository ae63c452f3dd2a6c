// The deque of frames (scheduler/frame_deque.hpp): the owner alone, scenario by scenario; the
// window between a thief's CAS and its return, where the owner rewrites the slot it took, with
// the broken copy-after-claim caught; and an owner that pushes and pops against two thieves, every
// frame taken exactly once with all of its words intact, through wrap-arounds and growth.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "stage5_parallel_algos/scheduler/frame_deque.hpp"

namespace {

using wslab::LeFences;
using wslab::StealOutcome;
using wslab::sched::BasicFrameDeque;
using wslab::sched::FrameCopy;
using wslab::sched::FrameDeque;

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

// Invariant: every frame pushed is taken exactly once, by the owner's pop or by one thief's
// steal, and whoever takes it sees all eight of its words. The owner pushes in bursts and pops
// some of each burst, in a small ring (wrap-arounds, growth), against two thieves.
TEST(FrameDeque, EveryFrameIsTakenExactlyOnceAndWholeAgainstTwoThieves) {
  constexpr std::uint64_t kFrames = 200'000;
  FrameDeque deque(4);
  std::vector<std::atomic<int>> taken(kFrames);
  std::atomic<std::uint64_t> torn{0};
  std::atomic<bool> done{false};
  auto take = [&](std::uint64_t id) {
    if (id >= kFrames) {
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
  while (next < kFrames) {
    const std::uint64_t burst = 1 + next % 7;
    for (std::uint64_t i = 0; i < burst && next < kFrames; ++i)
      deque.push(frame_of(next++));
    for (std::uint64_t i = 0; i < burst / 2; ++i)
      if (const auto* slot = deque.pop()) take(id_if_intact(*slot));
  }
  while (const auto* slot = deque.pop())
    take(id_if_intact(*slot));
  done.store(true, std::memory_order_release);
  t1.join();
  t2.join();
  EXPECT_EQ(torn.load(), 0u) << "a frame was taken with words of another";
  std::uint64_t wrong = 0;
  for (std::uint64_t id = 0; id < kFrames; ++id)
    if (taken[id].load() != 1) ++wrong;
  EXPECT_EQ(wrong, 0u) << "frames taken zero times or twice";
}

}  // namespace
