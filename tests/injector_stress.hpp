// The many-producer many-consumer stress test of an injector queue (any type with stage 4's
// InjectorQueue interface: push, pop), shared by stage 4's injector tests and stage 5's, which
// runs it with segments recycled. Items encode (producer, sequence). Invariants: each item popped
// exactly once; each consumer sees every producer's items in increasing sequence order.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "tests/exactly_once.hpp"

namespace wslab::test {

template <class Queue>
void check_mpmc_exactly_once_fifo_per_producer(int producers, int consumers,
                                               std::uint64_t per_producer) {
  Queue q;
  const std::uint64_t total = per_producer * static_cast<std::uint64_t>(producers);
  ExactlyOnce seen(total);
  std::atomic<std::uint64_t> popped{0};
  std::atomic<std::uint64_t> out_of_order{0};

  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      for (std::uint64_t s = 0; s < per_producer; ++s)
        q.push((static_cast<std::uint64_t>(p) << 40) | s);
    });
  }
  for (int c = 0; c < consumers; ++c) {
    threads.emplace_back([&] {
      std::vector<std::int64_t> last(static_cast<std::size_t>(producers), -1);
      while (popped.load(std::memory_order_relaxed) < total) {
        auto item = q.pop();
        if (!item) continue;
        const std::uint64_t p = *item >> 40;
        const std::uint64_t s = *item & ((std::uint64_t{1} << 40) - 1);
        if (p >= static_cast<std::uint64_t>(producers) || s >= per_producer) {
          ADD_FAILURE() << "an item nobody pushed: " << *item;
          popped.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        if (static_cast<std::int64_t>(s) <= last[p]) out_of_order.fetch_add(1);
        last[p] = static_cast<std::int64_t>(s);
        seen.mark(p * per_producer + s);
        popped.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (std::thread& t : threads)
    t.join();
  seen.expect_each_once();
  EXPECT_EQ(out_of_order.load(), 0u);
  EXPECT_FALSE(q.pop().has_value());
}

}  // namespace wslab::test
