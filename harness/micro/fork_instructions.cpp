// Instructions per fork, for callgrind: fib(n) computed one way on a one-worker scheduler, from
// the guest seat (the worker sleeps, so the calling thread is the only one that computes).
//
//   fork_instructions join|worker_ref|call N
//
// scripts/fork_instructions.sh runs it under callgrind at two sizes and divides the difference
// of the calling thread's instruction counts by the difference of the fork counts, so that
// startup and teardown cancel. `call` is the sequential fib: what one step of the recursion
// costs without a fork.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

std::uint64_t fib_ref(wslab::WorkerRef w, int n) {
  if (n < 2) return std::uint64_t(n);
  auto [x, y] = w.join([n](wslab::WorkerRef here) { return fib_ref(here, n - 1); },
                       [n](wslab::WorkerRef here) { return fib_ref(here, n - 2); });
  return x + y;
}

[[gnu::noinline]] std::uint64_t fib_call(int n) {
  return n < 2 ? std::uint64_t(n) : fib_call(n - 1) + fib_call(n - 2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fork_instructions join|worker_ref|call N\n");
    return 2;
  }
  const char* how = argv[1];
  const int n = std::atoi(argv[2]);
  wslab::Scheduler pool(1);
  // The guest seat is lent only in a sleeping worker's place: wait until the new worker parks
  // (a root that gets a worker's handle from here sat on the seat).
  while (!wslab::with_worker(pool, [](wslab::WorkerRef w) { return w.on_worker(); }))
    std::this_thread::yield();
  std::uint64_t result = 0;
  bool seated = false;
  if (std::strcmp(how, "join") == 0) {
    result = wslab::with_worker(pool, [&](wslab::WorkerRef w) {
      seated = w.on_worker();
      return fib_join(pool, n);
    });
  } else if (std::strcmp(how, "worker_ref") == 0) {
    result = wslab::with_worker(pool, [&](wslab::WorkerRef w) {
      seated = w.on_worker();
      return fib_ref(w, n);
    });
  } else if (std::strcmp(how, "call") == 0) {
    result = wslab::with_worker(pool, [&](wslab::WorkerRef w) {
      seated = w.on_worker();
      return fib_call(n);
    });
  } else {
    std::fprintf(stderr, "fork_instructions: unknown way %s\n", how);
    return 2;
  }
  // The check runs on a thread of its own, whose instructions the script does not count.
  std::uint64_t expected = 0;
  std::thread([&] { expected = fib_call(n); }).join();
  if (!seated || result != expected) {
    std::fprintf(stderr, "fork_instructions: %s\n",
                 seated ? "wrong result" : "the guest seat was not free: run it again");
    return 1;
  }
  std::printf("%llu\n", static_cast<unsigned long long>(result));
}
