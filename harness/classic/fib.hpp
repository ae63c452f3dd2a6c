// fib: fib(n) by binary recursion with no sequential cut-off, every call above the leaves a fork
// of two calls: about 1.6 fib(n) forks of almost no work each, so the time is the scheduler's
// cost per fork (seq is the same recursion as plain calls). wslab forks with join, oneTBB with
// parallel_invoke, libfork with fork + call + join.
#pragma once

#include <cstdint>

#include <oneapi/tbb/parallel_invoke.h>

#include "stage5_parallel_algos/threadpool.hpp"
#ifdef WSLAB_CLASSIC_LIBFORK
#include <libfork.hpp>
#endif

namespace classic::fib {

inline std::int64_t fib_seq(int n) {
  return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2);
}

// Pool: a wslab::ThreadPool, or the floor row's no_scheduler::Pool (no_scheduler.hpp).
template <class Pool>
std::int64_t fib_wslab(Pool& pool, int n) {
  if (n < 2) return n;
  auto [a, b] =
      pool.join([&] { return fib_wslab(pool, n - 1); }, [&] { return fib_wslab(pool, n - 2); });
  return a + b;
}

inline std::int64_t fib_tbb(int n) {
  if (n < 2) return n;
  std::int64_t a = 0, b = 0;
  tbb::parallel_invoke([&] { a = fib_tbb(n - 1); }, [&] { b = fib_tbb(n - 2); });
  return a + b;
}

#ifdef WSLAB_CLASSIC_LIBFORK
inline constexpr auto fib_lf = [](auto self, int n) -> lf::task<std::int64_t> {
  if (n < 2) co_return n;
  std::int64_t a = 0, b = 0;
  co_await lf::fork(&a, self)(n - 1);
  co_await lf::call(&b, self)(n - 2);
  co_await lf::join;
  co_return a + b;
};
#endif

// The known value, by iteration (nothing shared with the code under test).
inline std::int64_t fib_known(int n) {
  std::int64_t a = 0, b = 1;
  for (int i = 0; i < n; ++i) {
    const std::int64_t next = a + b;
    a = b;
    b = next;
  }
  return a;
}

struct Bench {
  using Result = std::int64_t;
  int n = 34;
  std::int64_t size() const { return n; }
  void reset() {}
  Result seq() const { return fib_seq(n); }
  template <class Pool>
  Result wslab(Pool& pool) const {
    return fib_wslab(pool, n);
  }
  Result tbb() const { return fib_tbb(n); }
#ifdef WSLAB_CLASSIC_LIBFORK
  Result libfork(lf::lazy_pool& pool) const { return lf::sync_wait(pool, fib_lf, n); }
#endif
  bool check(Result r) const { return r == fib_known(n); }
};

}  // namespace classic::fib
