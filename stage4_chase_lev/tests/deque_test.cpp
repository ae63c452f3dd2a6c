// ChaseLevDeque: sequential semantics, growth, a randomised differential test against a plain
// std::deque, and owner + thieves stress tests with exactly-once checking.
#include "stage4_chase_lev/chase_lev_deque.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/config.hpp"

#include "tests/deque_stress.hpp"

// The stress tests below can be pointed at a deliberately weakened deque (README.md, "Breaking
// it on purpose"): -DWSLAB_DEQUE_FENCES=NoPopFence.
#ifndef WSLAB_DEQUE_FENCES
#define WSLAB_DEQUE_FENCES LeFences
#endif

namespace {

using wslab::ChaseLevDeque;
using StressDeque = ChaseLevDeque<std::uintptr_t, wslab::WSLAB_DEQUE_FENCES>;
using wslab::StealOutcome;
using wslab::test::owner_and_thieves;

TEST(ChaseLevDequeSmoke, EmptyDequeGivesNothing) {
  ChaseLevDeque<std::uintptr_t> d(4);
  EXPECT_FALSE(d.pop().has_value());
  EXPECT_EQ(d.steal().outcome, StealOutcome::empty);
  EXPECT_TRUE(d.empty());
}

TEST(ChaseLevDequeSmoke, OwnerIsLifoThiefIsFifo) {
  ChaseLevDeque<std::uintptr_t> d(8);
  for (std::uintptr_t i = 1; i <= 5; ++i)
    d.push(i);
  EXPECT_EQ(d.size(), 5);
  EXPECT_EQ(*d.pop(), 5u);
  auto s = d.steal();
  ASSERT_EQ(s.outcome, StealOutcome::success);
  EXPECT_EQ(s.item, 1u);
  EXPECT_EQ(*d.pop(), 4u);
  EXPECT_EQ(d.steal().item, 2u);
  EXPECT_EQ(*d.pop(), 3u);
  EXPECT_FALSE(d.pop().has_value());
  EXPECT_EQ(d.steal().outcome, StealOutcome::empty);
  // Reusable after running dry.
  d.push(7);
  EXPECT_EQ(*d.pop(), 7u);
}

TEST(ChaseLevDequeGrowth, ManySizesFromCapacityTwo) {
  for (std::uintptr_t n : {1u, 2u, 3u, 7u, 8u, 9u, 63u, 64u, 65u, 1000u, 4097u, 100000u}) {
    ChaseLevDeque<std::uintptr_t> d(2);
    for (std::uintptr_t i = 0; i < n; ++i)
      d.push(i);
    EXPECT_GE(d.capacity(), n) << n;
    // Half by stealing (oldest first), half by popping (newest first).
    const std::uintptr_t stolen = n / 2;
    for (std::uintptr_t i = 0; i < stolen; ++i) {
      auto s = d.steal();
      ASSERT_EQ(s.outcome, StealOutcome::success);
      ASSERT_EQ(s.item, i);
    }
    for (std::uintptr_t i = n; i > stolen; --i)
      ASSERT_EQ(*d.pop(), i - 1);
    EXPECT_FALSE(d.pop().has_value()) << n;
  }
}

TEST(ChaseLevDequeGrowth, GrowsWhileWrappedAround) {
  // Move top far from zero first, so the copy in grow() crosses the end of the ring.
  ChaseLevDeque<std::uintptr_t> d(4);
  for (std::uintptr_t round = 0; round < 3; ++round) {
    for (std::uintptr_t i = 0; i < 3; ++i)
      d.push(i);
    for (std::uintptr_t i = 0; i < 3; ++i)
      ASSERT_EQ(d.steal().item, i);
  }
  for (std::uintptr_t i = 0; i < 100; ++i)
    d.push(i);
  for (std::uintptr_t i = 0; i < 100; ++i)
    ASSERT_EQ(d.steal().item, i);
  EXPECT_GE(d.retired_buffers(), 1u);
}

TEST(ChaseLevDequeDifferential, RandomOperationsMatchAReferenceDeque) {
  std::mt19937_64 rng(20261121);
  for (int trial = 0; trial < 50; ++trial) {
    ChaseLevDeque<std::uintptr_t> d(2);
    std::deque<std::uintptr_t> model;
    std::uintptr_t next = 1;
    const int bias = trial % 5;  // some trials mostly grow, some mostly shrink
    for (int op = 0; op < 20000; ++op) {
      const int r = static_cast<int>(rng() % 10);
      if (r < 4 + bias) {
        d.push(next);
        model.push_back(next);
        ++next;
      } else if (r < 7 + bias / 2) {
        auto got = d.pop();
        if (model.empty()) {
          ASSERT_FALSE(got.has_value());
        } else {
          ASSERT_TRUE(got.has_value());
          ASSERT_EQ(*got, model.back());
          model.pop_back();
        }
      } else {
        auto got = d.steal();
        if (model.empty()) {
          ASSERT_EQ(got.outcome, StealOutcome::empty);
        } else {
          // Single-threaded, a steal can never lose a race.
          ASSERT_EQ(got.outcome, StealOutcome::success);
          ASSERT_EQ(got.item, model.front());
          model.pop_front();
        }
      }
      ASSERT_EQ(d.size(), static_cast<std::int64_t>(model.size()));
    }
  }
}

constexpr std::uintptr_t kStressItems = wslab::kSanitized ? 300'000 : 10'000'000;

TEST(ChaseLevDequeStress, OwnerAndOneThiefMoveTenMillionItemsExactlyOnce) {
  StressDeque d(256);
  const std::uint64_t stolen = owner_and_thieves(d, 1, kStressItems);
  RecordProperty("stolen", std::to_string(stolen));
}

TEST(ChaseLevDequeStress, OwnerAndThreeThievesExactlyOnce) {
  StressDeque d(256);
  owner_and_thieves(d, 3, kStressItems);
}

TEST(ChaseLevDequeStress, StartingAtCapacityTwoGrowthRacesSteals) {
  // A fresh deque at capacity 2 every 10,000 items, with bursts up to 1,024: each round grows
  // the buffer nine times while the thieves are reading it. 10M items in total.
  constexpr std::uintptr_t kPerRound = 10'000;
  for (std::uintptr_t moved = 0; moved < kStressItems; moved += kPerRound) {
    StressDeque d(2);
    owner_and_thieves(d, 2, kPerRound, 1024);
    if (HasFailure()) break;
  }
}

}  // namespace
