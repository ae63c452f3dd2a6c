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

// The stress tests below can be pointed at a deliberately weakened deque (README.md, "Breaking
// it on purpose"): -DWSLAB_DEQUE_ORDERING=weak_pop_fence.
#ifndef WSLAB_DEQUE_ORDERING
#define WSLAB_DEQUE_ORDERING standard
#endif

namespace {

using wslab::ChaseLevDeque;
constexpr wslab::DequeOrdering kStressOrdering = wslab::DequeOrdering::WSLAB_DEQUE_ORDERING;
using wslab::StealOutcome;

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

// One owner pushing and popping, `thieves` threads stealing. Invariant: every item 1..n is taken
// exactly once, by somebody, and nothing else is ever taken. Bursts up to `max_burst` long.
// With a gate (steal_gate.hpp), the owner pops through it and each thief steals in short sessions
// (a few steals, then a pause with the gate closed), so that the owner keeps switching between
// fence-free pops and fenced ones while thieves arrive: both halves of the gate's argument.
std::uint64_t owner_and_thieves(std::size_t initial_capacity, int thieves, std::uintptr_t n,
                                std::uintptr_t max_burst = 64, wslab::StealGate* gate = nullptr) {
  ChaseLevDeque<std::uintptr_t, kStressOrdering> d(initial_capacity);
  std::unique_ptr<std::atomic<std::uint8_t>[]> taken(new std::atomic<std::uint8_t>[n + 1]);
  for (std::uintptr_t i = 0; i <= n; ++i)
    taken[i].store(0, std::memory_order_relaxed);
  std::atomic<bool> owner_done{false};
  std::atomic<std::uint64_t> stolen{0};
  std::atomic<std::uint64_t> bad{0};

  auto take = [&](std::uintptr_t item) {
    if (item == 0 || item > n || taken[item].fetch_add(1, std::memory_order_relaxed) != 0) {
      bad.fetch_add(1, std::memory_order_relaxed);
    }
  };

  std::vector<std::thread> pool;
  for (int t = 0; t < thieves; ++t) {
    pool.emplace_back([&, t] {
      std::uint64_t mine = 0;
      if (gate != nullptr) {
        std::minstd_rand rng(static_cast<unsigned>(t + 1));
        bool finished = false;
        while (!finished) {
          gate->open();
          for (unsigned a = 1 + rng() % 8; a > 0; --a) {
            auto r = d.steal();
            if (r.outcome == StealOutcome::success) {
              take(r.item);
              ++mine;
            } else if (r.outcome == StealOutcome::empty &&
                       owner_done.load(std::memory_order_acquire)) {
              finished = true;
              break;
            }
          }
          gate->close();
          for (unsigned i = rng() % 64; i > 0; --i)
            wslab::cpu_relax();
        }
        stolen.fetch_add(mine, std::memory_order_relaxed);
        return;
      }
      for (;;) {
        auto r = d.steal();
        if (r.outcome == StealOutcome::success) {
          take(r.item);
          ++mine;
        } else if (r.outcome == StealOutcome::empty && owner_done.load(std::memory_order_acquire)) {
          break;
        }
      }
      stolen.fetch_add(mine, std::memory_order_relaxed);
    });
  }

  // The owner pushes in bursts of varying length and pops part of each burst back, so that
  // pops of the last item race with steals and growth happens while thieves read.
  std::mt19937 rng(7);
  std::uintptr_t next = 1;
  while (next <= n) {
    const std::uintptr_t burst = 1 + rng() % max_burst;
    for (std::uintptr_t i = 0; i < burst && next <= n; ++i)
      d.push(next++);
    const std::uintptr_t pops = rng() % (burst + 1);
    for (std::uintptr_t i = 0; i < pops; ++i) {
      auto got = gate != nullptr ? d.pop(*gate) : d.pop();
      if (!got) break;
      take(*got);
    }
  }
  while (auto got = gate != nullptr ? d.pop(*gate) : d.pop())
    take(*got);
  owner_done.store(true, std::memory_order_release);
  for (std::thread& t : pool)
    t.join();

  EXPECT_EQ(bad.load(), 0u) << "an item was taken twice or an unknown item appeared";
  std::uintptr_t missing = 0;
  for (std::uintptr_t i = 1; i <= n; ++i)
    missing += taken[i].load() == 0 ? 1 : 0;
  EXPECT_EQ(missing, 0u) << "items lost";
  // Not an assertion on scheduling: just make the log say whether thieves got anything.
  return stolen.load();
}

constexpr std::uintptr_t kStressItems = wslab::kSanitized ? 300'000 : 10'000'000;

TEST(ChaseLevDequeStress, OwnerAndOneThiefMoveTenMillionItemsExactlyOnce) {
  const std::uint64_t stolen = owner_and_thieves(256, 1, kStressItems);
  RecordProperty("stolen", std::to_string(stolen));
}

TEST(ChaseLevDequeStress, OwnerAndThreeThievesExactlyOnce) {
  owner_and_thieves(256, 3, kStressItems);
}

TEST(ChaseLevDequeStress, StartingAtCapacityTwoGrowthRacesSteals) {
  // A fresh deque at capacity 2 every 10,000 items, with bursts up to 1,024: each round grows
  // the buffer nine times while the thieves are reading it. 10M items in total.
  constexpr std::uintptr_t kPerRound = 10'000;
  for (std::uintptr_t moved = 0; moved < kStressItems; moved += kPerRound) {
    owner_and_thieves(2, 2, kPerRound, 1024);
    if (HasFailure()) break;
  }
}

// The owner's fence-free pop (steal_gate.hpp) against thieves that keep opening and closing
// their sessions: 10M items, exactly once, one and three thieves, and from capacity 2.
TEST(ChaseLevDequeGatedStress, OwnerPopsThroughTheGateWhileOneThiefComesAndGoes) {
  wslab::StealGate gate;
  owner_and_thieves(256, 1, kStressItems, 64, &gate);
  EXPECT_EQ(gate.open_sessions(), wslab::asymmetric_fence_available() ? 0u : 1u);
}

TEST(ChaseLevDequeGatedStress, ThreeThievesComeAndGo) {
  wslab::StealGate gate;
  owner_and_thieves(256, 3, kStressItems, 64, &gate);
}

TEST(ChaseLevDequeGatedStress, FromCapacityTwoWithGrowth) {
  wslab::StealGate gate;
  constexpr std::uintptr_t kPerRound = 10'000;
  for (std::uintptr_t moved = 0; moved < kStressItems; moved += kPerRound) {
    owner_and_thieves(2, 2, kPerRound, 1024, &gate);
    if (HasFailure()) break;
  }
}

}  // namespace
