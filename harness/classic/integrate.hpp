// integrate: adaptive quadrature of f(x) = x^3 + x over [0, n] by recursive bisection, the
// "integrate" of the fork-join suites. An interval's trapezoid is compared with the sum of its
// halves' trapezoids; if they agree within kEpsilon the halves' sum is the interval's area,
// otherwise both halves are integrated the same way, in parallel. The curvature grows with x, so
// the recursion is deeper toward n: an unbalanced binary tree of 15 million calls for
// n = 1000, each a few flops. Every system does the same arithmetic in the same order, so all
// return the same double (check() below).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>

#include <oneapi/tbb/parallel_invoke.h>

#include "stage5_parallel_algos/threadpool.hpp"
#ifdef WSLAB_CLASSIC_LIBFORK
#include <libfork.hpp>
#endif

namespace classic::integrate {

inline constexpr double kEpsilon = 1e-9;

inline double f(double x) {
  return (x * x + 1.0) * x;
}

// One step on [x1, x2] whose trapezoid is `whole` (f(x1) = y1, f(x2) = y2): the midpoint, the
// halves' trapezoids, and whether they settle the interval. Shared by every system.
struct Split {
  double x0, y0, left, right;
  bool done;
};
inline Split split(double x1, double y1, double x2, double y2, double whole) {
  const double half = (x2 - x1) / 2;
  const double x0 = x1 + half, y0 = f(x0);
  const double left = (y1 + y0) / 2 * half, right = (y0 + y2) / 2 * half;
  return {x0, y0, left, right, std::fabs(left + right - whole) < kEpsilon};
}

inline double area_seq(double x1, double y1, double x2, double y2, double whole) {
  const Split s = split(x1, y1, x2, y2, whole);
  if (s.done) return s.left + s.right;
  return area_seq(x1, y1, s.x0, s.y0, s.left) + area_seq(s.x0, s.y0, x2, y2, s.right);
}

// Pool: a wslab::ThreadPool, or the floor row's no_scheduler::Pool (no_scheduler.hpp).
template <class Pool>
double area_wslab(Pool& pool, double x1, double y1, double x2, double y2, double whole) {
  const Split s = split(x1, y1, x2, y2, whole);
  if (s.done) return s.left + s.right;
  auto [a, b] = pool.join([&] { return area_wslab(pool, x1, y1, s.x0, s.y0, s.left); },
                          [&] { return area_wslab(pool, s.x0, s.y0, x2, y2, s.right); });
  return a + b;
}

inline double area_tbb(double x1, double y1, double x2, double y2, double whole) {
  const Split s = split(x1, y1, x2, y2, whole);
  if (s.done) return s.left + s.right;
  double a = 0, b = 0;
  tbb::parallel_invoke([&] { a = area_tbb(x1, y1, s.x0, s.y0, s.left); },
                       [&] { b = area_tbb(s.x0, s.y0, x2, y2, s.right); });
  return a + b;
}

#ifdef WSLAB_CLASSIC_LIBFORK
inline constexpr auto area_lf = [](auto self, double x1, double y1, double x2, double y2,
                                   double whole) -> lf::task<double> {
  const Split s = split(x1, y1, x2, y2, whole);
  if (s.done) co_return s.left + s.right;
  double a = 0, b = 0;
  co_await lf::fork(&a, self)(x1, y1, s.x0, s.y0, s.left);
  co_await lf::call(&b, self)(s.x0, s.y0, x2, y2, s.right);
  co_await lf::join;
  co_return a + b;
};
#endif

struct Bench {
  using Result = double;
  int n = 1000;
  std::int64_t size() const { return n; }
  void reset() {}
  // The root call: the whole interval [0, n] and its trapezoid.
  double hi() const { return double(n); }
  double whole() const { return (f(0) + f(hi())) / 2 * hi(); }
  Result seq() const { return area_seq(0, f(0), hi(), f(hi()), whole()); }
  template <class Pool>
  Result wslab(Pool& pool) const {
    return area_wslab(pool, 0, f(0), hi(), f(hi()), whole());
  }
  Result tbb() const { return area_tbb(0, f(0), hi(), f(hi()), whole()); }
#ifdef WSLAB_CLASSIC_LIBFORK
  Result libfork(lf::lazy_pool& pool) const {
    return lf::sync_wait(pool, area_lf, 0.0, f(0), hi(), f(hi()), whole());
  }
#endif
  // Two checks. Against the exact integral: each settled interval is off by about kEpsilon / 3,
  // so 7.5 million of them stay far below the tolerance. And bit for bit against the sequential
  // recursion, computed once per process: a lost or doubled interval near 0, whose area is below
  // any useful tolerance, still changes the sum's bits.
  bool check(Result r) const {
    const double exact = std::pow(hi(), 4) / 4 + hi() * hi() / 2;
    if (!reference_) reference_ = seq();
    return std::fabs(r - exact) <= 1e-12 * exact && r == *reference_;
  }
  mutable std::optional<double> reference_;
};

}  // namespace classic::integrate
