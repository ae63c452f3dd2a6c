// The owner-and-thieves stress test of a Chase-Lev deque, shared by stage 4's deque tests and
// stage 5's steal-gate tests. Invariant: every item 1..n is taken exactly once, by somebody, and
// nothing else is ever taken.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "common/config.hpp"
#include "stage4_chase_lev/chase_lev_deque.hpp"

namespace wslab::test {

// Thieves that steal whenever they like: no session to open or close.
struct NoSessions {
  static constexpr bool kSessions = false;
  void open() noexcept {}
  void close() noexcept {}
};

// One owner pushing and popping, `thieves` threads stealing, on `d` (empty on entry). Bursts up
// to `max_burst` long. With sessions (Sessions::kSessions), each thief steals in short sessions
// (open(), a few steals, close(), then a pause), so that an owner whose fence depends on open
// sessions keeps switching between fence-free pops and fenced ones while thieves arrive.
// Returns how many items thieves took.
template <class Deque, class Sessions = NoSessions>
std::uint64_t owner_and_thieves(Deque& d, int thieves, std::uintptr_t n,
                                std::uintptr_t max_burst = 64, Sessions sessions = {}) {
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
      std::minstd_rand rng(static_cast<unsigned>(t + 1));
      bool finished = false;
      while (!finished) {
        sessions.open();
        for (unsigned a = Sessions::kSessions ? 1 + rng() % 8 : 1024; a > 0; --a) {
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
        sessions.close();
        if constexpr (Sessions::kSessions) {
          for (unsigned i = rng() % 64; i > 0; --i)
            cpu_relax();
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
      auto got = d.pop();
      if (!got) break;
      take(*got);
    }
  }
  while (auto got = d.pop())
    take(*got);
  owner_done.store(true, std::memory_order_release);
  for (std::thread& t : pool)
    t.join();

  EXPECT_EQ(bad.load(), 0u) << "an item was taken twice or an unknown item appeared";
  std::uintptr_t missing = 0;
  for (std::uintptr_t i = 1; i <= n; ++i)
    missing += taken[i].load() == 0 ? 1 : 0;
  EXPECT_EQ(missing, 0u) << "items lost";
  return stolen.load();
}

}  // namespace wslab::test
