// One build of the library in scripts/ab_fib.sh's program: fib(n) by pool.join (or, with
// AB_WORKER_REF defined, by WorkerRef::join; with AB_GROUP, n rounds of 1,000 empty callables in
// a TaskGroup, the shape of oneTBB's and Lace's spawn-and-sync loops) on a pool of its own, timed.
// Compiled twice, from two revisions, with `wslab` renamed (-Dwslab=...) and AB_SIDE set to a or b,
// so that both builds live in one process without sharing a symbol; the program's main()
// (ab_fib_main.cpp) alternates them pool by pool, so that both meet the same host.
#include <chrono>
#include <cstdint>
#include <utility>

#include "stage5_parallel_algos/threadpool.hpp"

#define AB_CAT2(x, y) x##y
#define AB_CAT(x, y) AB_CAT2(x, y)

namespace {

wslab::ThreadPool* pool_now = nullptr;

long fib(int n) {
  if (n < 2) return n;
  auto [a, b] = pool_now->join([n] { return fib(n - 1); }, [n] { return fib(n - 2); });
  return a + b;
}

#ifdef AB_WORKER_REF
long fib_ref(wslab::WorkerRef w, int n) {
  if (n < 2) return n;
  auto [a, b] = w.join([n](wslab::WorkerRef here) { return fib_ref(here, n - 1); },
                       [n](wslab::WorkerRef here) { return fib_ref(here, n - 2); });
  return a + b;
}

long fib_on(wslab::ThreadPool& pool, int n) {
  return pool.with_worker([n](wslab::WorkerRef w) { return fib_ref(w, n); });
}
#elif !defined(AB_GROUP)
long fib_on(wslab::ThreadPool&, int n) {
  return fib(n);
}
#endif

#ifdef AB_GROUP
constexpr int kGroupCallables = 1000;

void group_rounds(wslab::ThreadPool& pool, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    wslab::TaskGroup group(pool);
    for (int i = 0; i < kGroupCallables; ++i)
      group.run([] {});
    group.wait();
  }
}
#endif

// Nanoseconds that f() takes, run once as a task of the pool while the caller waits outside it.
template <class F>
double ns_as_one_task(wslab::ThreadPool& pool, F f) {
  const auto start = std::chrono::steady_clock::now();
  pool.spawn(std::move(f));
  pool.wait_all();
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

// A pool of `threads` workers, as an opaque handle.
void* AB_CAT(ab_make_, AB_SIDE)(int threads) {
  return new wslab::ThreadPool(threads);
}
void AB_CAT(ab_free_, AB_SIDE)(void* pool) {
  delete static_cast<wslab::ThreadPool*>(pool);
}

#ifdef AB_GROUP
// n rounds of a group on the pool, from one of its tasks: nanoseconds per callable.
double AB_CAT(ab_run_, AB_SIDE)(void* handle, int n) {
  auto& pool = *static_cast<wslab::ThreadPool*>(handle);
  return ns_as_one_task(pool, [&] { group_rounds(pool, n); }) / (double(n) * kGroupCallables);
}
#else
// fib(n) computed once on the pool from one of its tasks: nanoseconds per fork, or a negative
// number if the result is wrong.
double AB_CAT(ab_run_, AB_SIDE)(void* handle, int n) {
  auto& pool = *static_cast<wslab::ThreadPool*>(handle);
  pool_now = &pool;
  long result = 0;
  const double ns = ns_as_one_task(pool, [&] { result = fib_on(pool, n); });
  long a = 0, b = 1;  // fib(n) and fib(n + 1); a run makes fib(n + 1) - 1 forks
  for (int i = 0; i < n; ++i) {
    const long c = a + b;
    a = b;
    b = c;
  }
  return result == a ? ns / double(b - 1) : -1.0;
}
#endif
