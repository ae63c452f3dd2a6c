// ChaseLevDeque: sequential semantics, growth, a randomised differential test against a plain
// std::deque, and owner + thieves stress tests with exactly-once checking.
#include "stage4_chase_lev/chase_lev_deque.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "common/config.hpp"

#include "tests/deque_checks.hpp"
#include "tests/deque_stress.hpp"

// The stress tests below can be pointed at a deliberately weakened deque (README.md, "Breaking
// it on purpose"): -DWSLAB_DEQUE_FENCES=NoPopFence.
#ifndef WSLAB_DEQUE_FENCES
#define WSLAB_DEQUE_FENCES LeFences
#endif

namespace {

using wslab::ChaseLevDeque;
using StressDeque = ChaseLevDeque<std::uintptr_t, wslab::WSLAB_DEQUE_FENCES>;
using wslab::test::owner_and_thieves;

// The single-threaded checks, shared with the deque exercise (tests/deque_checks.hpp).
using PlainDeque = ChaseLevDeque<std::uintptr_t>;

TEST(ChaseLevDequeSmoke, EmptyDequeGivesNothing) {
  wslab::test::check_empty_deque_gives_nothing<PlainDeque>();
}

TEST(ChaseLevDequeSmoke, OwnerIsLifoThiefIsFifo) {
  wslab::test::check_owner_lifo_thief_fifo<PlainDeque>();
}

TEST(ChaseLevDequeGrowth, ManySizesFromCapacityTwo) {
  wslab::test::check_growth_from_capacity_two<PlainDeque>();
}

TEST(ChaseLevDequeGrowth, GrowsWhileWrappedAround) {
  wslab::test::check_growth_while_wrapped<PlainDeque>();
}

TEST(ChaseLevDequeDifferential, RandomOperationsMatchAReferenceDeque) {
  wslab::test::check_random_operations_against_std_deque<PlainDeque>();
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
