// Counters that many threads bump at once while a workload runs, then read once after the
// executor's wait(). Each thread adds into its own cache-line-sized shard (picked once per
// thread), so counting does not turn into a contended cache line that would hide the scheduler's
// own costs.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/config.hpp"

namespace wslab::bench {

namespace detail {
inline std::size_t this_thread_shard(std::size_t shards) noexcept {
  static std::atomic<std::size_t> next{0};
  thread_local const std::size_t mine = next.fetch_add(1, std::memory_order_relaxed);
  return mine % shards;
}
}  // namespace detail

template <std::size_t Fields>
class ShardedTally {
 public:
  static constexpr std::size_t kShards = 64;

  // Relaxed: the executor's wait() orders every task's effects before the read in total().
  // The adds stay atomic because two threads can share a shard (more threads than shards, or
  // std::async's thread-per-task).
  void add(std::size_t field, std::uint64_t amount) noexcept {
    shards_[detail::this_thread_shard(kShards)].values[field].fetch_add(amount,
                                                                        std::memory_order_relaxed);
  }

  std::uint64_t total(std::size_t field) const noexcept {
    std::uint64_t sum = 0;
    for (const Shard& s : shards_)
      sum += s.values[field].load(std::memory_order_relaxed);
    return sum;
  }

  void clear() noexcept {
    for (Shard& s : shards_) {
      for (auto& v : s.values)
        v.store(0, std::memory_order_relaxed);
    }
  }

 private:
  struct alignas(kCacheLineSize) Shard {
    std::array<std::atomic<std::uint64_t>, Fields> values{};
  };
  std::array<Shard, kShards> shards_{};
};

// A 64-bit mix (splitmix64's finaliser): summing mix(id) over the items that ran tells a lost
// item plus a duplicated one apart from a correct run, which a plain count cannot.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace wslab::bench
