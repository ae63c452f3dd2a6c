// Instructions per fork, for callgrind: fib(n) computed one way on a one-worker scheduler, from
// the guest seat (the worker sleeps, so the calling thread is the only one that computes).
//
//   fork_instructions join|join_ref_captures|worker_ref|worker_ref_stack|co_join|task_group|call N
//
// scripts/fork_instructions.sh runs it under callgrind at two sizes, counting the calling thread's
// instructions inside fib_the_way() only, and divides their difference by the difference of the
// fork counts, so that what a call costs whatever its size cancels. `call` is the sequential fib:
// what one step of the recursion costs without a fork. `task_group` forks each step as a TaskGroup
// of two callables, the shape of the classic task-group programs (harness/classic/).
// `worker_ref_stack` is `worker_ref` with the step 'Frames in the slot' off (b's frame in the
// joining stack, linked from the slot). `join_ref_captures` is `join` with halves that capture
// by reference ([&]) instead of by value.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <thread>

#include "stage5_parallel_algos/threadpool.hpp"

namespace {

std::uint64_t fib_join(wslab::IThreadPool& pool, int n) {
  if (n < 2) return std::uint64_t(n);
  auto [x, y] = wslab::join(
      pool, [&pool, n] { return fib_join(pool, n - 1); },
      [&pool, n] { return fib_join(pool, n - 2); });
  return x + y;
}

// The same with halves that capture by reference: n lives in the frame's memory, read back
// through a pointer by every half.
std::uint64_t fib_join_ref_captures(wslab::IThreadPool& pool, int n) {
  if (n < 2) return std::uint64_t(n);
  auto [x, y] = wslab::join(
      pool, [&] { return fib_join_ref_captures(pool, n - 1); },
      [&] { return fib_join_ref_captures(pool, n - 2); });
  return x + y;
}

std::uint64_t fib_ref(wslab::WorkerRef w, int n) {
  if (n < 2) return std::uint64_t(n);
  auto [x, y] = w.join([n](wslab::WorkerRef here) { return fib_ref(here, n - 1); },
                       [n](wslab::WorkerRef here) { return fib_ref(here, n - 2); });
  return x + y;
}

wslab::CoTask<std::uint64_t> fib_co(wslab::IThreadPool& pool, int n) {
  if (n < 2) co_return std::uint64_t(n);
  auto [x, y] = co_await wslab::co_join(pool, fib_co(pool, n - 1), fib_co(pool, n - 2));
  co_return x + y;
}

std::uint64_t fib_group(wslab::IThreadPool& pool, int n) {
  if (n < 2) return std::uint64_t(n);
  std::uint64_t x = 0;
  std::uint64_t y = 0;
  wslab::TaskGroup group(pool);
  group.run([&pool, &x, n] { x = fib_group(pool, n - 1); });
  group.run([&pool, &y, n] { y = fib_group(pool, n - 2); });
  group.wait();
  return x + y;
}

[[gnu::noinline]] std::uint64_t fib_call(int n) {
  return n < 2 ? std::uint64_t(n) : fib_call(n - 1) + fib_call(n - 2);
}

// What the script counts (callgrind --toggle-collect=*fib_the_way*): fib(n) computed `how` on the
// worker handle `w`; empty when `how` is none of the seven. Called from the root of with_worker()
// in main(), so that no function around it has fib_the_way in its name: callgrind switches
// counting on and off at every function whose name matches, and a root lambda defined in here
// (with_worker_outside<that lambda> around it, then the lambda) would count only by the parity
// of the nesting.
[[gnu::noinline]] std::optional<std::uint64_t> fib_the_way(wslab::Scheduler& pool,
                                                           wslab::WorkerRef w, std::string_view how,
                                                           int n) {
  if (how == "join") return fib_join(pool, n);
  if (how == "join_ref_captures") return fib_join_ref_captures(pool, n);
  if (how == "worker_ref" || how == "worker_ref_stack") return fib_ref(w, n);
  // The guest seat is one of the pool's threads: sync_wait() helps here, and the whole tree
  // runs on this thread (the one worker sleeps).
  if (how == "co_join") return wslab::sync_wait(pool, fib_co(pool, n));
  if (how == "task_group") return fib_group(pool, n);
  if (how == "call") return fib_call(n);
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr,
                 "usage: fork_instructions "
                 "join|join_ref_captures|worker_ref|worker_ref_stack|co_join|task_group|call "
                 "N\n");
    return 2;
  }
  const std::string_view how = argv[1];
  const int n = std::atoi(argv[2]);
  wslab::SchedulerKnobs knobs;
  knobs.frames_in_slots = how != "worker_ref_stack";
  wslab::Scheduler pool(1, {}, knobs);
  // The guest seat is lent only in a sleeping worker's place: wait until the new worker parks
  // (a root that gets a worker's handle from here sat on the seat).
  while (!wslab::with_worker(pool, [](wslab::WorkerRef w) { return w.on_worker(); }))
    std::this_thread::yield();
  // Empty too when the root did not get a worker's handle (the guest seat was taken).
  const std::optional<std::uint64_t> result =
      wslab::with_worker(pool, [&](wslab::WorkerRef w) -> std::optional<std::uint64_t> {
        if (!w.on_worker()) return std::nullopt;
        return fib_the_way(pool, w, how, n);
      });
  if (!result || *result != fib_call(n)) {
    std::fprintf(stderr, "fork_instructions: %s\n",
                 result ? "wrong result" : "an unknown way, or the guest seat was taken");
    return 1;
  }
  std::printf("%llu\n", static_cast<unsigned long long>(*result));
}
