// IdleCounts: the word in which a parking protocol counts its idle workers, and the futex epoch
// they sleep on. A protocol derives from it and writes its own transitions of the word; what every
// such protocol needs (the fields, the pusher's read, the sleep loop) lives here once.
//
// One 64-bit word holds three counts, so that every transition is one read-modify-write and every
// decision sees a consistent picture:
//   searching  awake, out of local work, scanning the other queues (or just woken to do so);
//   sleepers   announced as going to sleep, not yet woken;
//   tokens     wake-ups handed to sleepers and not yet picked up.
// Three 20-bit fields; the four bits above them (from kFirstFreeBit) are the protocol's own.
// Every wake-up bumps the epoch, a separate 32-bit futex word.
#pragma once

#include <atomic>
#include <cstdint>

#include "config.hpp"
#include "futex_epoch.hpp"
#include "std_atomics.hpp"
#include "thread_pool.hpp"

namespace wslab {

// `Atomics` and `Epoch` are std::atomic and FutexEpoch, or the model checker's
// (stage4_chase_lev/tests/parking_model_test.cpp runs stage 4's protocol under it).
template <class Atomics = StdAtomics, class Epoch = FutexEpoch>
class IdleCounts {
 public:
  using Ticket = typename Epoch::Ticket;

  // A thread out of local work starts searching; or stops, having found none (seq_cst, like
  // every transition of the word: the protocols' proofs order them in S).
  void begin_search() noexcept { counts_.fetch_add(kSearcher, std::memory_order_seq_cst); }
  void end_search() noexcept { counts_.fetch_sub(kSearcher, std::memory_order_seq_cst); }

  // Blocks until a token is ours; we return counted as a searcher.
  void park(Ticket ticket) noexcept {
    park_with(ticket, [this](Ticket t) { epoch_.wait(t); });
  }

 protected:
  static constexpr std::uint64_t kFieldBits = 20;
  static constexpr std::uint64_t kFieldMask = (std::uint64_t{1} << kFieldBits) - 1;
  static constexpr std::uint64_t kSearcher = 1;
  static constexpr std::uint64_t kSleeper = kSearcher << kFieldBits;
  static constexpr std::uint64_t kToken = kSleeper << kFieldBits;
  static constexpr std::uint64_t kFirstFreeBit = kToken << kFieldBits;
  static_assert(kMaxThreads <= kFieldMask);  // a pool's threads fit any field

  static std::uint64_t searching(std::uint64_t c) noexcept { return c & kFieldMask; }
  static std::uint64_t sleepers(std::uint64_t c) noexcept { return (c / kSleeper) & kFieldMask; }
  static std::uint64_t tokens(std::uint64_t c) noexcept { return (c / kToken) & kFieldMask; }

  // The counts as a pusher reads them after publishing work: its half of the store-load pair with
  // a parker's announcing RMW and seq_cst re-scan.
  [[gnu::always_inline]] std::uint64_t load_after_publishing() noexcept {
    if constexpr (WSLAB_TSAN) {
      // TSan does not model fences. A seq_cst RMW on the word is ordered with the parker's RMW:
      // either it reads the parker's count, or the parker's RMW reads ours and acquires our
      // publication. Not the default: every push would take the line exclusive.
      return counts_.fetch_add(0, std::memory_order_seq_cst);
    } else {
      // seq_cst fence: our publication comes before the load of the counts in S, against the
      // parker's RMW and its seq_cst re-scan.
      Atomics::thread_fence(std::memory_order_seq_cst);
      return counts_.load(std::memory_order_relaxed);
    }
  }

  // The sleep loop: take a token, or call `wait(ticket)`, which sleeps on the epoch unless a bump
  // came after the ticket was read (or returns early: a timeout, a signal, a wake-up meant for
  // someone else).
  template <class Wait>
  void park_with(Ticket ticket, Wait&& wait) noexcept {
    for (;;) {
      if (try_take_token()) return;
      wait(ticket);
      // Reread before the token check: a wake-up that bumps the epoch after this load hands out
      // its token first, so either we see the token or the futex sees the new epoch.
      ticket = epoch_.ticket();
    }
  }

  alignas(kCacheLineSize) typename Atomics::template atomic<std::uint64_t> counts_{0};
  Epoch epoch_;  // what sleepers block on: every wake-up bumps it

 private:
  bool try_take_token() noexcept {
    std::uint64_t c = counts_.load(std::memory_order_seq_cst);
    while (tokens(c) != 0) {
      if (counts_.compare_exchange_weak(c, c - kToken, std::memory_order_seq_cst,
                                        std::memory_order_seq_cst)) {
        return true;
      }
    }
    return false;
  }
};

}  // namespace wslab
