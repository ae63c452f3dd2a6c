// matmul: C = A * B for n x n row-major matrices by 8-way divide and conquer. Each of C, A and B
// splits into quadrants and C's four quadrants take two rounds of four independent products,
//   round 1: C11 += A11 B11, C12 += A11 B12, C21 += A21 B11, C22 += A21 B12
//   round 2: C11 += A12 B21, C12 += A12 B22, C21 += A22 B21, C22 += A22 B22
// (the four products of a round write different quadrants, so they run in parallel without
// locks, and the two rounds in order), down to kBlock x kBlock blocks multiplied by a plain loop.
// n is a power of two. For n = 1024 that is 4,096 leaf blocks and 1,170 task groups of four tasks:
// coarse tasks, so the time is the leaves' arithmetic and memory traffic, not the scheduler's.
//
// The inputs are small integers, so every product and sum is exact in a double and any
// evaluation order gives the same C; check() tests C x = A (B x) for two integer vectors x
// (Freivalds' check, O(n^2)) and the sum of C against sum_k colsum_A(k) rowsum_B(k).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <vector>

#include <oneapi/tbb/task_group.h>

#include "harness/classic/no_scheduler.hpp"
#ifdef WSLAB_CLASSIC_LIBFORK
#include <libfork.hpp>
#endif

namespace classic::matmul {

inline constexpr std::size_t kBlock = 64;  // 3 blocks of 32 KB: the leaf works in L2

// A square view: its top-left element and the row stride of the matrix it lives in.
struct View {
  double* p;
  std::size_t ld;
  View quad(std::size_t r, std::size_t c, std::size_t half) const {
    return {p + r * half * ld + c * half, ld};
  }
};

// C += A * B on n x n views, i-k-j order: the inner loop streams a row of B into a row of C, which
// the compiler vectorizes. Never inlined, so that every system runs this same machine code: a
// copy inlined into one system's recursion and not another's made their leaves differ by 1.7x
// on one thread (the same instructions; only where the hot loop landed differed). Aligned to a
// cache line for the same reason between builds: two builds of this file whose leaf began at
// addresses 0x110 apart (a change elsewhere in the library) differed by 1.66x on one thread.
[[gnu::noinline, gnu::aligned(64)]] inline void leaf(View a, View b, View c, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    double* __restrict crow = c.p + i * c.ld;
    for (std::size_t k = 0; k < n; ++k) {
      const double aik = a.p[i * a.ld + k];
      const double* __restrict brow = b.p + k * b.ld;
      for (std::size_t j = 0; j < n; ++j)
        crow[j] += aik * brow[j];
    }
  }
}

// The eight products of one level, as (C quadrant, A quadrant, B quadrant) indices (row * 2 +
// column): rounds[r][i] is product i of round r.
struct Product {
  int c, a, b;
};
inline constexpr Product kRounds[2][4] = {{{0, 0, 0}, {1, 0, 1}, {2, 2, 0}, {3, 2, 1}},
                                          {{0, 1, 2}, {1, 1, 3}, {2, 3, 2}, {3, 3, 3}}};
inline View quad(View v, int q, std::size_t half) {
  return v.quad(q / 2, q % 2, half);
}

inline void mul_seq(View a, View b, View c, std::size_t n) {
  if (n <= kBlock) return leaf(a, b, c, n);
  const std::size_t h = n / 2;
  for (const auto& round : kRounds) {
    for (const Product& p : round)
      mul_seq(quad(a, p.a, h), quad(b, p.b, h), quad(c, p.c, h), h);
  }
}

// Pool: a wslab::ThreadPool, or the floor row's no_scheduler::Pool (no_scheduler.hpp).
template <class Pool>
void mul_wslab(Pool& pool, View a, View b, View c, std::size_t n) {
  if (n <= kBlock) return leaf(a, b, c, n);
  const std::size_t h = n / 2;
  for (const auto& round : kRounds) {
    classic::TaskGroup<Pool> g(pool);
    for (const Product& p : round) {
      g.run([=, &pool] { mul_wslab(pool, quad(a, p.a, h), quad(b, p.b, h), quad(c, p.c, h), h); });
    }
    g.wait();
  }
}

inline void mul_tbb(View a, View b, View c, std::size_t n) {
  if (n <= kBlock) return leaf(a, b, c, n);
  const std::size_t h = n / 2;
  for (const auto& round : kRounds) {
    tbb::task_group g;
    for (const Product& p : round) {
      g.run([=] { mul_tbb(quad(a, p.a, h), quad(b, p.b, h), quad(c, p.c, h), h); });
    }
    g.wait();
  }
}

#ifdef WSLAB_CLASSIC_LIBFORK
inline constexpr auto mul_lf = [](auto self, View a, View b, View c,
                                  std::size_t n) -> lf::task<void> {
  if (n <= kBlock) co_return leaf(a, b, c, n);
  const std::size_t h = n / 2;
  for (const auto& round : kRounds) {
    for (int i = 0; i < 3; ++i) {
      const Product p = round[i];
      co_await lf::fork(self)(quad(a, p.a, h), quad(b, p.b, h), quad(c, p.c, h), h);
    }
    const Product p = round[3];
    co_await lf::call(self)(quad(a, p.a, h), quad(b, p.b, h), quad(c, p.c, h), h);
    co_await lf::join;
  }
};
#endif

struct Bench {
  using Result = double;  // the sum of C's elements (an integer)
  std::size_t n;
  std::vector<double> a, b, c;

  explicit Bench(std::size_t size) : n(size), a(n * n), b(n * n), c(n * n) {
    if (n == 0 || (n & (n - 1)) != 0) throw std::invalid_argument("matmul: n must be a power of 2");
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        a[i * n + j] = double(int((i * 7 + j * 13) % 9) - 4);
        b[i * n + j] = double(int((i * 11 + j * 5) % 7) - 3);
      }
    }
  }
  std::int64_t size() const { return std::int64_t(n); }
  void reset() { std::fill(c.begin(), c.end(), 0.0); }  // untimed: every product accumulates
  View va() { return {a.data(), n}; }
  View vb() { return {b.data(), n}; }
  View vc() { return {c.data(), n}; }
  Result sum() const { return std::accumulate(c.begin(), c.end(), 0.0); }

  Result seq() {
    mul_seq(va(), vb(), vc(), n);
    return sum();
  }
  template <class Pool>
  Result wslab(Pool& pool) {
    mul_wslab(pool, va(), vb(), vc(), n);
    return sum();
  }
  Result tbb() {
    mul_tbb(va(), vb(), vc(), n);
    return sum();
  }
#ifdef WSLAB_CLASSIC_LIBFORK
  Result libfork(lf::lazy_pool& pool) {
    lf::sync_wait(pool, mul_lf, va(), vb(), vc(), n);
    return sum();
  }
#endif

  bool check(Result r) const {
    // sum(C) = sum_k (sum_i A[i][k]) (sum_j B[k][j])
    double expect = 0;
    for (std::size_t k = 0; k < n; ++k) {
      double col = 0, row = 0;
      for (std::size_t i = 0; i < n; ++i)
        col += a[i * n + k];
      for (std::size_t j = 0; j < n; ++j)
        row += b[k * n + j];
      expect += col * row;
    }
    if (r != expect) return false;
    for (int seed : {1, 2}) {
      std::vector<double> x(n), bx(n, 0.0);
      for (std::size_t j = 0; j < n; ++j)
        x[j] = double(int((j * (3 + seed) + seed) % 5) - 2);
      for (std::size_t k = 0; k < n; ++k) {
        for (std::size_t j = 0; j < n; ++j)
          bx[k] += b[k * n + j] * x[j];
      }
      for (std::size_t i = 0; i < n; ++i) {
        double cx = 0, abx = 0;
        for (std::size_t j = 0; j < n; ++j)
          cx += c[i * n + j] * x[j];
        for (std::size_t k = 0; k < n; ++k)
          abx += a[i * n + k] * bx[k];
        if (cx != abx) return false;
      }
    }
    return true;
  }
};

}  // namespace classic::matmul
