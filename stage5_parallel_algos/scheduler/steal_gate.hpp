// StealGate: lets deque owners skip pop()'s seq_cst fence while no thread is stealing.
//
// The fence in ChaseLevDeque::pop() orders the owner's store to bottom before its load of top,
// against a thief's load of top, fence, load of bottom (the deque's lemma). It is a locked
// instruction on every pop, a large share of what a spawned task costs in all.
// Yet a thief exists only while some worker is out of work. So thieves announce themselves here
// before they steal, and owners look before they pop:
//
//   thief:  open():  count += 1 (seq_cst RMW); heavy_fence()      ... steal() ... close()
//   owner:  pop():   store bottom; [compiler barrier]; if count != 0: seq_cst fence; load top
//
// Why an owner that read count == 0 may skip its fence (asymmetric_fence.hpp): the owner's load
// of count was either before a thief's increment in memory order, or after it.
//   * Before: the thief's heavy_fence() then ran a barrier on the owner's core after that load,
//     hence after the owner's earlier store to bottom, and returned only once that store was
//     visible. The thief's steal() reads bottom later: it sees the owner's reservation, exactly
//     as if the owner had fenced.
//   * After: the owner read count >= 1 and fences; the deque's own argument applies.
// A thief that closed the gate has finished its steal() (its CAS on top comes before its
// release decrement), and the owner's acquire load of count orders its load of top after that
// CAS: no stale top.
//
// The gate is held for a whole search (a worker opens it once, keeps it while its steals fail,
// and closes it when it finds work or parks), so a searching worker costs one membarrier(), and
// busy workers pop without fences. Where membarrier is unavailable, and under TSan, the count
// starts at 1 and never reaches 0: every pop fences, as in Le et al.
//
// What checks it. TSan models neither membarrier nor the compiler-only half, so its build keeps
// the count at 1: it checks the session bookkeeping and every path around the fence, never the
// fence-free pop. That pop is checked in Release by tests/steal_gate_litmus_test.cpp: owner and
// thief meet hundreds of thousands of times exactly in the store-buffering window, and a gate
// whose open() skips heavy_fence() (BasicStealGate<HeavyFence::skipped>) lets them take the same
// item there within seconds, while this gate never does.
#pragma once

#include <atomic>
#include <cstdint>

#include "../../common/config.hpp"
#include "asymmetric_fence.hpp"

namespace wslab::sched {

// `Heavy` is HeavyFence::skipped only in tests (the broken variant above); use StealGate.
template <HeavyFence Heavy = HeavyFence::kept>
class BasicStealGate {
 public:
  BasicStealGate() noexcept : thieves_(asymmetric_ ? 0u : 1u) {}
  BasicStealGate(const BasicStealGate&) = delete;
  BasicStealGate& operator=(const BasicStealGate&) = delete;

  // Before the first steal of a session.
  void open() noexcept {
    // seq_cst: the increment is globally visible before the heavy fence starts.
    thieves_.fetch_add(1, std::memory_order_seq_cst);
    // (Never under TSan, where asymmetric_ is false: compiled out so that TSan's build has no
    // fence it cannot model, not even on a path that does not run. Without this fence,
    // tests/steal_gate_litmus_test.cpp fails in Release.)
    if (!WSLAB_TSAN && asymmetric_ && Heavy == HeavyFence::kept) heavy_fence();
  }

  // After the session's last steal. release: that steal's CAS on top is visible to an owner whose
  // acquire load reads the decremented count.
  void close() noexcept { thieves_.fetch_sub(1, std::memory_order_release); }

  // Owner side, between its store to bottom and its load of top: false means "fence".
  bool owner_may_skip_fence() const noexcept {
    // Compiler barrier only: keeps the owner's store to bottom before this load. The hardware
    // half is the thief's heavy_fence().
    std::atomic_signal_fence(std::memory_order_seq_cst);
    // acquire: the owner's load of top comes after the last closed session's CAS.
    return thieves_.load(std::memory_order_acquire) == 0;
  }

  // Sessions open now (1 more, permanently, when the asymmetric fence is unavailable).
  std::uint32_t open_sessions() const noexcept { return thieves_.load(std::memory_order_relaxed); }
  // That permanent one: 1 where the asymmetric fence is unavailable (every pop fences), else 0.
  std::uint32_t always_open() const noexcept { return asymmetric_ ? 0u : 1u; }

 private:
  const bool asymmetric_ = asymmetric_fence_available();
  alignas(kCacheLineSize) std::atomic<std::uint32_t> thieves_;
};

using StealGate = BasicStealGate<>;

// The deque's fence policy (stage4_chase_lev/chase_lev_deque.hpp, DequeFences) for owners whose
// thieves all steal inside sessions of `gate`: pop() fences only while a session is open.
template <class Gate = StealGate>
struct BasicGatedFences {
  const Gate* gate;
  static constexpr bool kPushRelease = true;
  bool pop_needs_fence() const noexcept { return !gate->owner_may_skip_fence(); }
};
using GatedFences = BasicGatedFences<>;

}  // namespace wslab::sched
