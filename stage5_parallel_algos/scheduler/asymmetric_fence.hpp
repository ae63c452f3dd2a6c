// The asymmetric fence: a cheap half (a compiler barrier) for a fast path that runs constantly,
// paid for by a heavy half (the membarrier system call) on a slow path that runs rarely.
//
// A Dekker pair ("I store my flag, then load yours"; "you store yours, then load mine") needs a
// store-load barrier on both sides, because each core's store buffer may delay its store past
// its own later load. membarrier(PRIVATE_EXPEDITED) makes the kernel run a full barrier on every
// other core currently running a thread of this process (a thread not running passed through a
// context switch, which is one) before the call returns. So after the slow side has stored its
// flag and returned from membarrier(), any fast-side thread either had its store drained to
// memory by that barrier (the slow side's later load sees it), or reaches its load after the
// barrier (and sees the slow side's flag). The fast side needs only the compiler to keep its
// store before its load.
//
// Used twice in the scheduler: a pusher's wake-up check against a parking worker or a guest
// handing its seat back (parking_lot.hpp), and a deque owner's pop against a worker that starts
// stealing (steal_gate.hpp). TSan models neither half, so its builds use ordinary fences or RMWs
// instead; tests/*_litmus_test.cpp check both uses in Release, and catch each without its heavy
// half.
#pragma once

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "../../common/config.hpp"

namespace wslab::sched {

// Whether a protocol built on the asymmetric fence runs its heavy half. `skipped` is a
// deliberately broken variant for tests only (tests/*_litmus_test.cpp show that they catch it);
// the production classes use the default, `kept`.
enum class HeavyFence { kept, skipped };

// The heavy half. Without registration (see below) callers never get here.
inline void heavy_fence() noexcept {
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
    std::atomic_thread_fence(std::memory_order_seq_cst);  // cannot happen once registered
  }
}

// True when the heavy half is available: registration is per process and idempotent; it fails on
// kernels before 4.14 or under a seccomp filter, and the callers then use ordinary fences on both
// sides. Always false under ThreadSanitizer, which models neither membarrier nor the compiler-only
// half: TSan builds run the symmetric protocols, which it can check.
inline bool asymmetric_fence_available() noexcept {
  if constexpr (WSLAB_TSAN) {
    return false;
  } else {
    static const bool registered =
        syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    return registered;
  }
}

}  // namespace wslab::sched
