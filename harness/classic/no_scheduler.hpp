// The floor row: the wslab programs of the classic workloads on a stand-in "pool" that has no
// scheduler behind it. join(a, b) calls a() then b(); a TaskGroup's run() builds its callable in
// the next slot of one stack of slots, and wait() calls the group's callables newest first, as
// wslab's waiter does, each in its slot. No thread, no atomic, no deque, no allocation per
// callable.
//
// What it measures: the cost of the program's own shape (the closures and their copies, the
// per-node counts array and its sum, one indirect call per callable) with the scheduler's
// cost taken out. A scheduler that defers a group's callables, as any work-stealing one must so
// that a thief can take them, can at best reach this row's time on one thread; wslab's time over
// this row's is what the scheduler itself costs (classic.py prints both ratios to seq).
//
// Limits, none of which the workloads meet: one thread; a callable must not run() into its own
// group (its slot is in use while it runs); nothing may throw; at most kSlots callables wait at
// once (UTS T3, the deepest tree, keeps about 13,000).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "stage5_parallel_algos/threadpool.hpp"

namespace classic {
namespace no_scheduler {

class Pool {
 public:
  Pool() : slots_(new Slot[kSlots]) {}  // uninitialised: only the slots used are touched

  template <class A, class B>
  auto join(A&& a, B&& b) {
    auto x = a();  // sequenced: a first, as wslab's join runs a on the calling thread
    auto y = b();
    return std::pair{x, y};
  }

 private:
  friend class TaskGroup;
  static constexpr std::size_t kSlots = std::size_t{1} << 16;
  struct alignas(16) Slot {
    void (*call)(Slot&);  // runs the callable built in `bytes`, then destroys it
    unsigned char bytes[112];
  };
  std::unique_ptr<Slot[]> slots_;
  std::size_t top_ = 0;  // slots [0, top_) hold callables not yet finished
};

class TaskGroup {
 public:
  explicit TaskGroup(Pool& pool) : pool_(pool), base_(pool.top_) {}
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;
  ~TaskGroup() { wait(); }

  template <class F>
    requires std::invocable<std::decay_t<F>&>
  void run(F&& fn) {
    using Fn = std::decay_t<F>;
    static_assert(sizeof(Fn) <= sizeof(Pool::Slot::bytes) && alignof(Fn) <= alignof(Pool::Slot),
                  "no_scheduler::TaskGroup: the callable does not fit a slot");
    if (pool_.top_ == Pool::kSlots) {
      std::fprintf(stderr, "classic_bench: floor: more than %zu callables wait at once\n",
                   Pool::kSlots);
      std::abort();
    }
    Pool::Slot& slot = pool_.slots_[pool_.top_++];
    ::new (static_cast<void*>(slot.bytes)) Fn(std::forward<F>(fn));
    slot.call = [](Pool::Slot& s) {
      Fn& f = *std::launder(reinterpret_cast<Fn*>(s.bytes));
      f();
      f.~Fn();
    };
  }

  // The slot is given back only after its call: the groups the callable makes use the slots
  // above it, and empty them before it returns.
  void wait() {
    while (pool_.top_ > base_) {
      Pool::Slot& slot = pool_.slots_[pool_.top_ - 1];
      slot.call(slot);
      --pool_.top_;
    }
  }

 private:
  Pool& pool_;
  const std::size_t base_;
};

}  // namespace no_scheduler

// The group a workload's wslab program makes on its pool: wslab::TaskGroup on a
// wslab::ThreadPool, no_scheduler::TaskGroup on the floor's stand-in.
template <class Pool>
struct GroupOn {
  using type = wslab::TaskGroup;
};
template <>
struct GroupOn<no_scheduler::Pool> {
  using type = no_scheduler::TaskGroup;
};
template <class Pool>
using TaskGroup = typename GroupOn<Pool>::type;

}  // namespace classic
