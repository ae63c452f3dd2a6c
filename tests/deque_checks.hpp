// The single-threaded checks of a Chase-Lev deque holding std::uintptr_t, as function templates
// on the deque type, so that one set of checks serves any deque with stage 4's interface: stage
// 4's own tests (stage4_chase_lev/tests/chase_lev_deque_test.cpp) and the deque exercise, which
// grades the student's deque with them. Call each from a TEST; a failed ASSERT ends the check.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <optional>
#include <random>

#include "stage4_chase_lev/chase_lev_deque.hpp"

namespace wslab::test {

template <class Deque>
void check_empty_deque_gives_nothing() {
  Deque d(4);
  EXPECT_FALSE(d.pop().has_value());
  EXPECT_EQ(d.steal().outcome, StealOutcome::empty);
  EXPECT_TRUE(d.empty());
}

// The owner takes the newest item, a thief the oldest; the deque works again after running dry.
template <class Deque>
void check_owner_lifo_thief_fifo() {
  Deque d(8);
  for (std::uintptr_t i = 1; i <= 5; ++i)
    d.push(i);
  EXPECT_EQ(d.size(), 5);
  EXPECT_EQ(d.pop(), std::optional<std::uintptr_t>(5));
  auto s = d.steal();
  ASSERT_EQ(s.outcome, StealOutcome::success);
  EXPECT_EQ(s.item, 1u);
  EXPECT_EQ(d.pop(), std::optional<std::uintptr_t>(4));
  EXPECT_EQ(d.steal().item, 2u);
  EXPECT_EQ(d.pop(), std::optional<std::uintptr_t>(3));
  EXPECT_FALSE(d.pop().has_value());
  EXPECT_EQ(d.steal().outcome, StealOutcome::empty);
  d.push(7);
  EXPECT_EQ(d.pop(), std::optional<std::uintptr_t>(7));
}

// From capacity 2, n pushes grow the ring as often as needed; then half is stolen (oldest first)
// and half popped (newest first).
template <class Deque>
void check_growth_from_capacity_two() {
  for (std::uintptr_t n : {1u, 2u, 3u, 7u, 8u, 9u, 63u, 64u, 65u, 1000u, 4097u, 100000u}) {
    Deque d(2);
    for (std::uintptr_t i = 0; i < n; ++i)
      d.push(i);
    EXPECT_GE(d.capacity(), n) << n;
    const std::uintptr_t stolen = n / 2;
    for (std::uintptr_t i = 0; i < stolen; ++i) {
      auto s = d.steal();
      ASSERT_EQ(s.outcome, StealOutcome::success) << "n = " << n;
      ASSERT_EQ(s.item, i) << "n = " << n;
    }
    for (std::uintptr_t i = n; i > stolen; --i)
      ASSERT_EQ(d.pop(), std::optional<std::uintptr_t>(i - 1)) << "n = " << n;
    EXPECT_FALSE(d.pop().has_value()) << "n = " << n;
  }
}

// top far from zero before the ring grows, so that the copy crosses the end of the ring.
template <class Deque>
void check_growth_while_wrapped() {
  Deque d(4);
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

// Random pushes, pops and steals from one thread, against a std::deque doing the same; some
// trials mostly grow, some mostly shrink. Single-threaded, a steal never loses a race.
template <class Deque>
void check_random_operations_against_std_deque() {
  std::mt19937_64 rng(20261121);
  for (int trial = 0; trial < 50; ++trial) {
    Deque d(2);
    std::deque<std::uintptr_t> model;
    std::uintptr_t next = 1;
    const int bias = trial % 5;
    for (int op = 0; op < 20000; ++op) {
      const int r = static_cast<int>(rng() % 10);
      if (r < 4 + bias) {
        d.push(next);
        model.push_back(next++);
      } else if (r < 7 + bias / 2) {
        auto got = d.pop();
        if (model.empty()) {
          ASSERT_FALSE(got.has_value()) << "trial " << trial << ", operation " << op;
        } else {
          ASSERT_EQ(got, std::optional<std::uintptr_t>(model.back()))
              << "trial " << trial << ", operation " << op;
          model.pop_back();
        }
      } else {
        auto got = d.steal();
        if (model.empty()) {
          ASSERT_EQ(got.outcome, StealOutcome::empty) << "trial " << trial << ", operation " << op;
        } else {
          ASSERT_EQ(got.outcome, StealOutcome::success)
              << "trial " << trial << ", operation " << op;
          ASSERT_EQ(got.item, model.front()) << "trial " << trial << ", operation " << op;
          model.pop_front();
        }
      }
      ASSERT_EQ(d.size(), static_cast<std::int64_t>(model.size()))
          << "trial " << trial << ", operation " << op;
    }
  }
}

}  // namespace wslab::test
