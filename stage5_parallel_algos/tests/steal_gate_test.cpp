// The steal gate (scheduler/steal_gate.hpp): a deque whose owner pops without its fence while no
// steal session is open, against thieves that keep opening and closing sessions. 10M items,
// exactly once, with one and three thieves, and from capacity 2 with growth. Then the sessions
// held across steals (scheduler/steal_sessions.hpp): which jobs close them, and when.
#include "stage5_parallel_algos/scheduler/steal_gate.hpp"

#include <gtest/gtest.h>

#include <cstdint>

#include "stage4_chase_lev/chase_lev_deque.hpp"
#include "stage5_parallel_algos/scheduler/steal_sessions.hpp"
#include "stage5_parallel_algos/tests/idle_pool.hpp"
#include "tests/deque_stress.hpp"

namespace {

using wslab::sched::GatedFences;
using wslab::sched::kLinger;
using wslab::sched::StealGate;
using wslab::sched::StealSession;
using wslab::sched::StealSessions;
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

// A thread that never stole holds no session, yet its own jobs close the idle one a parked thief
// left: kLinger of them keep it open, the next closes it. A count kept only by threads that hold a
// session of their own would leave it open, and every owner's pops fencing, for good.
TEST(StealSessions, AThreadThatNeverStoleClosesAnIdleSessionAfterKLingerJobs) {
  StealSessions sessions(/*gated=*/true, /*linger=*/true);
  const std::uint32_t closed = sessions.open_now();
  StealSession thief;
  StealSession owner;
  sessions.before_steals(thief);
  sessions.end(thief);  // parked: left open, idle
  ASSERT_EQ(sessions.open_now(), closed + 1);
  for (std::uint32_t i = 0; i < kLinger; ++i)
    sessions.note_busy(owner);
  EXPECT_EQ(sessions.open_now(), closed + 1) << "closed before kLinger jobs";
  sessions.note_busy(owner);
  EXPECT_EQ(sessions.open_now(), closed) << "the idle session is still open";
}

// A thief that runs its own work closes its session after kLinger + 1 jobs.
TEST(StealSessions, AThiefBusyWithItsOwnJobsClosesItsSession) {
  StealSessions sessions(/*gated=*/true, /*linger=*/true);
  const std::uint32_t closed = sessions.open_now();
  StealSession thief;
  sessions.before_steals(thief);
  ASSERT_EQ(sessions.open_now(), closed + 1);
  for (std::uint32_t i = 0; i < kLinger; ++i)
    sessions.note_busy(thief);
  EXPECT_EQ(sessions.open_now(), closed + 1);
  sessions.note_busy(thief);
  EXPECT_EQ(sessions.open_now(), closed);
  EXPECT_FALSE(thief.open);
}

}  // namespace
