// Help-while-waiting: a thread that waits for a forked piece of work (TaskGroup::wait, join's
// generic path, Future::get) should not block a worker. It first runs its *own* pending work
// inline if nobody has started it yet, then helps the pool with try_run_one() within the bounds
// of help_bounds.hpp, and only sleeps when there is nothing to do.
#pragma once

#include <algorithm>
#include <chrono>

#include "../../common/config.hpp"
#include "../../common/thread_pool.hpp"
#include "completion_flag.hpp"
#include "help_bounds.hpp"

namespace wslab {

// Until `flag` is done: run own work (`run_own` returns true when it ran something), else help
// the pool within the bounds, else spin a little, else sleep. The sleep has a timeout so that a
// waiter on a worker thread wakes to look for new work even if its own work takes long; a waiter
// with no pool to help (pool == nullptr) sleeps until the flag is set.
//
// out_of_own_work() runs each time the waiter finds no own work, before it helps, spins or
// sleeps: a waiter that keeps some of its completions to itself (TaskGroup) hands them in there,
// since the flag cannot be set while it holds any. Before it helps, too: a wait whose work is all
// done would otherwise run a foreign task first, on top of its frame, only to learn that.
// unknown_to_flag() says whether there is work the flag cannot know of until out_of_own_work()
// (a task group's group jobs, which run_own() or another thread pushed): the flag then does not
// end the wait.
//
// `lifetime` is nullptr when the caller keeps `pool` alive for the whole wait (the wait is part of
// a call on the pool, such as join(), or runs on one of its workers). Otherwise it is `pool`'s,
// held by something that may outlive the pool (a future, a task group), and the waiter may be a
// thread the pool's destructor does not wait for: it then helps only inside a visit (PoolVisit;
// help_once(pool, lifetime)), never once the destructor has drained the pool. One of the pool's
// workers needs no visit (the pool outlives its workers' calls): it is recognised by its thread's
// identity alone (on_a_worker_of()), touching nothing of the pool, so that a wait on a worker makes
// no read-modify-write on the pool's lifetime record, a line every waiter of the pool shares. Any
// other thread asks the pool once, inside a visit.
template <class RunOwn, class OutOfOwnWork = void (*)(), class UnknownToFlag = bool (*)()>
void help_until_done(
    IThreadPool* pool, const PoolLifetime* lifetime, CompletionFlag& flag, RunOwn&& run_own,
    OutOfOwnWork&& out_of_own_work = [] {},
    UnknownToFlag&& unknown_to_flag = [] { return false; }) {
  bool visit_each_help = false;
  if (pool != nullptr && lifetime != nullptr && !on_a_worker_of(*pool)) {
    PoolVisit visit(*lifetime);
    if (visit) {
      visit_each_help = !pool->owns_current_thread();
    } else {
      pool = nullptr;  // gone, or drained by its destructor: nothing left to help with
    }
  }
  constexpr int kSpinRounds = 12;
  int idle_rounds = 0;
  auto nap = std::chrono::microseconds(50);
  for (;;) {
    if (flag.done() && !unknown_to_flag()) return;
    if (run_own()) {
      idle_rounds = 0;
      continue;
    }
    out_of_own_work();
    if (flag.done() && !unknown_to_flag()) return;
    if (pool != nullptr && (visit_each_help ? help_once(*pool, *lifetime) : help_once(*pool))) {
      idle_rounds = 0;
      continue;
    }
    if (idle_rounds < kSpinRounds) {
      // Short exponential spin: the awaited work is usually nearly done when we get here.
      for (int i = 0; i < (1 << (idle_rounds / 2)); ++i)
        cpu_relax();
      ++idle_rounds;
      continue;
    }
    if (pool == nullptr) {  // nothing to help with: no timed wake-ups (CompletionFlag::wait)
      flag.wait();
      if (!unknown_to_flag()) return;
      continue;
    }
    if (flag.sleep_for(nap) && !unknown_to_flag()) return;
    nap = std::min(nap * 2, std::chrono::microseconds(2000));
  }
}

}  // namespace wslab
