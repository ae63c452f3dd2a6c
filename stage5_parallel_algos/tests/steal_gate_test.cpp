// The steal gate (scheduler/steal_gate.hpp): a deque whose owner pops without its fence while no
// steal session is open, against thieves that keep opening and closing sessions. 10M items,
// exactly once, with one and three thieves, and from capacity 2 with growth.
#include "stage5_parallel_algos/scheduler/steal_gate.hpp"

#include <gtest/gtest.h>

#include <cstdint>

#include "stage4_chase_lev/chase_lev_deque.hpp"
#include "stage5_parallel_algos/tests/idle_pool.hpp"
#include "tests/deque_stress.hpp"

namespace {

using wslab::sched::GatedFences;
using wslab::sched::StealGate;
using GatedDeque = wslab::ChaseLevDeque<std::uintptr_t, GatedFences>;

struct GateSessions {
  static constexpr bool kSessions = true;
  StealGate* gate;
  void open() noexcept { gate->open(); }
  void close() noexcept { gate->close(); }
};

constexpr std::uintptr_t kStressItems = wslab::kSanitized ? 300'000 : 10'000'000;

TEST(StealGateStress, OwnerPopsThroughTheGateWhileOneThiefComesAndGoes) {
  StealGate gate;
  GatedDeque d(256, GatedFences{&gate});
  wslab::test::owner_and_thieves(d, 1, kStressItems, 64, GateSessions{&gate});
  EXPECT_EQ(gate.open_sessions(), wslab::test::idle_gate_count());
}

TEST(StealGateStress, ThreeThievesComeAndGo) {
  StealGate gate;
  GatedDeque d(256, GatedFences{&gate});
  wslab::test::owner_and_thieves(d, 3, kStressItems, 64, GateSessions{&gate});
}

TEST(StealGateStress, FromCapacityTwoWithGrowth) {
  StealGate gate;
  constexpr std::uintptr_t kPerRound = 10'000;
  for (std::uintptr_t moved = 0; moved < kStressItems; moved += kPerRound) {
    GatedDeque d(2, GatedFences{&gate});
    wslab::test::owner_and_thieves(d, 2, kPerRound, 1024, GateSessions{&gate});
    if (HasFailure()) break;
  }
}

}  // namespace
