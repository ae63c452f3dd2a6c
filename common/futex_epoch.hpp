// FutexEpoch: a 32-bit counter that a thread sleeps on until it changes, through the raw futex
// system call. A parking protocol reads a ticket, decides to sleep, and then sleeps only if no
// wake-up has bumped the epoch since: the kernel compares the word with the ticket under the same
// lock FUTEX_WAKE takes, so a bump between the read and the sleep is never slept through.
// (std::atomic<uint32_t>::wait sits on the same futex, with its own spinning and a process-wide
// table of waiter counts in front; the parkers need nothing more than this.)
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>

#include <atomic>
#include <cstdint>

#include "config.hpp"

namespace wslab {

class FutexEpoch {
 public:
  using Ticket = std::uint32_t;

  // seq_cst: in the single order with the protocol's counts word, so that a ticket read after a
  // sleeper's announcement is no older than any bump that came before it.
  Ticket ticket() const noexcept { return word_.load(std::memory_order_seq_cst); }

  // Sleeps while the epoch equals `ticket`; may also return spuriously (a signal, or a bump).
  void wait(Ticket ticket) noexcept {
    syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word_), FUTEX_WAIT_PRIVATE, ticket,
            nullptr, nullptr, 0);
  }

  // wait() for at most `timeout`; false when it timed out (it may also return true spuriously).
  bool wait_for(Ticket ticket, std::chrono::nanoseconds timeout) noexcept {
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(timeout);
    timespec ts{static_cast<time_t>(secs.count()), static_cast<long>((timeout - secs).count())};
    const long r = syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word_), FUTEX_WAIT_PRIVATE,
                           ticket, &ts, nullptr, 0);
    return !(r == -1 && errno == ETIMEDOUT);
  }

  // seq_cst: after whatever the waker handed out (a token), so a sleeper that reads the new epoch
  // sees it; a sleeper that read the old epoch returns from wait() at once.
  void bump_and_wake(int how_many) noexcept {
    word_.fetch_add(1, std::memory_order_seq_cst);
    syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word_), FUTEX_WAKE_PRIVATE, how_many,
            nullptr, nullptr, 0);
  }

 private:
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                std::atomic<std::uint32_t>::is_always_lock_free);
  alignas(kCacheLineSize) std::atomic<std::uint32_t> word_{0};
};

}  // namespace wslab
