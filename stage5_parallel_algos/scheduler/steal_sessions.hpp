// Sessions of the steal gate held across steals (README.md, steps 'Steal gate' and 'Lingering
// sessions'). Owners may pop without a fence only while no session of the gate is open
// (steal_gate.hpp), and opening one costs a membarrier(): microseconds when the other cores run
// our threads (an inter-processor interrupt each way). So a session outlives the steal that
// opened it:
//   - it stays open while its thief keeps coming back to steal, and closes once the thief has
//     run or popped kLinger jobs without trying to steal (it is busy with its own work), or when
//     a busy owner asks a thief that only forks to close it (busy() returns true; the scheduler
//     asks, step 'Forks off the count');
//   - a thief that stops stealing for a while (it parks, or a guest leaves) leaves its session
//     open, idle, for the next thief to adopt instead of paying a membarrier() (on every wake-up
//     of a parked worker that then steals). Meanwhile owners fence their pops, as they would with
//     a thief about; the first owner that has run kLinger jobs of its own closes the idle ones.
// Sound because an idle session never closes between its opener's heavy fence and an adopter's
// steals: the gate's count stays above zero all along.
//
// Without the gate (SchedulerKnobs::steal_gate off) one session is open for the pool's whole
// life, so every pop fences, and thieves open none. Without lingering (SchedulerKnobs::linger
// off) a session closes at its thief's first job, and when its thief parks.
#pragma once

#include <atomic>
#include <cstdint>

#include "../../common/config.hpp"
#include "steal_gate.hpp"

namespace wslab::sched {

// Jobs a thread runs without trying to steal before it closes its session. A rent-or-buy choice:
// a session left open costs every busy owner a fence per pop, and closing it too early costs a
// membarrier() (an interrupt on every core) when the thread steals again, the price of many
// fences; kLinger stays below that break-even. It is long enough that a parallel_for of a few
// hundred leaves keeps its sessions open for the whole call, and short enough that a worker busy
// on its own work soon lets owners pop without fences again.
inline constexpr std::uint32_t kLinger = 1024;

// One thread's part: whether it holds a session, and how busy it has been since its last steal.
// Written by its thread only.
struct StealSession {
  // Read by other threads too (relaxed: a hint), to find whom to ask to close
  // (Scheduler::close_forkers_sessions()).
  std::atomic<bool> open{false};
  // Jobs left to run or pop before the thread counts as busy (StealSessions::note_busy()), counted
  // down so that the look on every job is a decrement in memory and a branch on zero.
  std::uint32_t runs_left = kLinger + 1;
};

class StealSessions {
 public:
  StealSessions(bool gated, bool linger) noexcept : gated_(gated), linger_(linger) {
    if (!gated_) gate_.open();  // never closed: every pop fences
  }
  StealSessions(const StealSessions&) = delete;
  StealSessions& operator=(const StealSessions&) = delete;

  // What the deques' fence policy (GatedFences) reads on every pop.
  const StealGate& gate() const noexcept { return gate_; }

  // Before a thread's steals: opens a session (or adopts an idle one) unless it holds one.
  void before_steals(StealSession& s) noexcept {
    if (!gated_) return;
    if (!s.open.load(std::memory_order_relaxed)) {
      if (!adopt_idle()) gate_.open();
      s.open.store(true, std::memory_order_relaxed);
    }
    // Not lingering: the next job this thread runs or pops closes the session (note_busy()).
    s.runs_left = linger_ ? kLinger + 1 : 1;
  }

  // For every job a thread runs and every pop of its own Chase-Lev deque, the work an open session
  // makes fence: a thread that keeps doing its own work closes its session. A fork taken back from
  // the split deque does not count: it never fences (README.md, step 'Forks off the count').
  // True when this call counted the thread busy and sessions of other threads are still open (the
  // scheduler then asks their holders to close them).
  [[gnu::always_inline]] bool note_busy(StealSession& s) noexcept {
    return --s.runs_left == 0 && busy(s);
  }
  // The thread counts as busy now. True when sessions of other threads are still open afterwards
  // (active ones: only their holders may close them).
  [[gnu::noinline]] bool busy(StealSession& s) noexcept {
    s.runs_left = kLinger + 1;
    // Busy on its own work: let the owners pop fence-free again. Our session closes, and so do
    // the ones idle threads left open.
    if (s.open.load(std::memory_order_relaxed)) {
      s.open.store(false, std::memory_order_relaxed);
      gate_.close();
    }
    close_idle();
    return gated_ && gate_.open_sessions() > gate_.always_open();
  }

  // The thread stops stealing for a while (it parks, or a guest leaves): its session stays open,
  // idle, for the next thief to adopt; without lingering it closes.
  void end(StealSession& s) noexcept {
    if (!s.open.load(std::memory_order_relaxed)) return;
    s.open.store(false, std::memory_order_relaxed);
    if (linger_) {
      // release: our steals' CASs on top happen before whoever closes this session later.
      idle_.fetch_add(1, std::memory_order_release);
    } else {
      gate_.close();
    }
  }

  // A one-off session, for a thread outside the pool (it steals rarely).
  void open_once() noexcept {
    if (gated_) gate_.open();
  }
  void close_once() noexcept {
    if (gated_) gate_.close();
  }

  // Sessions open now, idle ones included (steal_gate.hpp: one more when the heavy fence is
  // unavailable). For tests and the lab.
  std::uint32_t open_now() const noexcept { return gate_.open_sessions(); }

 private:
  bool adopt_idle() noexcept {
    std::uint32_t n = idle_.load(std::memory_order_relaxed);
    while (n != 0) {
      // acquire: the former holder's steals happen before ours, and before our close.
      if (idle_.compare_exchange_weak(n, n - 1, std::memory_order_acquire,
                                      std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

  void close_idle() noexcept {
    // acquire (in adopt_idle()): the former holder's steals happen before our close (a release),
    // hence before the load of top of an owner that reads the count we leave (steal_gate.hpp,
    // "closed the gate").
    while (idle_.load(std::memory_order_relaxed) != 0) {
      if (!adopt_idle()) break;
      gate_.close();
    }
  }

  const bool gated_;
  const bool linger_;
  StealGate gate_;  // open while some thread steals: owners' pops fence only then
  // Sessions left open by threads that stopped stealing (end()).
  alignas(kCacheLineSize) std::atomic<std::uint32_t> idle_{0};
};

}  // namespace wslab::sched
