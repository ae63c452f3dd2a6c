// nqueens: count every placement of n non-attacking queens on an n x n board, one queen per row.
// A node of the search is a partial board (the columns of the queens in rows 0..row-1); it makes
// one task per column where a queen in `row` is safe, each with its own copy of the board, and
// adds up the children's counts. For n = 12: 14,200 solutions, about 860,000 tasks of a few
// dozen comparisons each, with fan-outs from 12 down to 1.
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <numeric>

#include <oneapi/tbb/task_group.h>

#include "harness/classic/no_scheduler.hpp"
#ifdef WSLAB_CLASSIC_LIBFORK
#include <libfork.hpp>
#endif

namespace classic::nqueens {

inline constexpr int kMaxN = 16;  // the largest n with a count in kSolutions

struct Board {
  std::array<std::int8_t, kMaxN> col{};  // col[r]: the column of the queen in row r
};

// Safe: no queen in rows 0..row-1 on the same column or diagonal.
inline bool safe(const Board& b, int row, int col) {
  for (int r = 0; r < row; ++r) {
    const int d = b.col[r] - col;
    if (d == 0 || std::abs(d) == row - r) return false;
  }
  return true;
}

inline Board place(Board b, int row, int col) {
  b.col[row] = std::int8_t(col);
  return b;
}

using Counts = std::array<std::uint64_t, kMaxN>;  // one slot per column: written by its child
inline std::uint64_t total(const Counts& c) {
  return std::accumulate(c.begin(), c.end(), std::uint64_t{0});
}

inline std::uint64_t solve_seq(int n, const Board& b, int row) {
  if (row == n) return 1;
  std::uint64_t sum = 0;
  for (int col = 0; col < n; ++col) {
    if (safe(b, row, col)) sum += solve_seq(n, place(b, row, col), row + 1);
  }
  return sum;
}

// Pool: a wslab::ThreadPool, or the floor row's no_scheduler::Pool (no_scheduler.hpp).
template <class Pool>
std::uint64_t solve_wslab(Pool& pool, int n, const Board& b, int row) {
  if (row == n) return 1;
  Counts counts{};
  classic::TaskGroup<Pool> g(pool);
  for (int col = 0; col < n; ++col) {
    if (!safe(b, row, col)) continue;
    g.run([=, &pool, &counts, next = place(b, row, col)] {
      counts[col] = solve_wslab(pool, n, next, row + 1);
    });
  }
  g.wait();
  return total(counts);
}

inline std::uint64_t solve_tbb(int n, const Board& b, int row) {
  if (row == n) return 1;
  Counts counts{};
  tbb::task_group g;
  for (int col = 0; col < n; ++col) {
    if (!safe(b, row, col)) continue;
    g.run([=, &counts, next = place(b, row, col)] { counts[col] = solve_tbb(n, next, row + 1); });
  }
  g.wait();
  return total(counts);
}

#ifdef WSLAB_CLASSIC_LIBFORK
inline constexpr auto solve_lf = [](auto self, int n, Board b, int row) -> lf::task<std::uint64_t> {
  if (row == n) co_return 1;
  Counts counts{};
  for (int col = 0; col < n; ++col) {
    if (safe(b, row, col)) co_await lf::fork(&counts[col], self)(n, place(b, row, col), row + 1);
  }
  co_await lf::join;
  co_return total(counts);
};
#endif

// Solutions for n = 0..16 (OEIS A000170).
inline constexpr std::array<std::uint64_t, kMaxN + 1> kSolutions = {
    1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596, 2279184, 14772512};

struct Bench {
  using Result = std::uint64_t;
  int n = 12;
  std::int64_t size() const { return n; }
  void reset() {}
  Result seq() const { return solve_seq(n, Board{}, 0); }
  template <class Pool>
  Result wslab(Pool& pool) const {
    return solve_wslab(pool, n, Board{}, 0);
  }
  Result tbb() const { return solve_tbb(n, Board{}, 0); }
#ifdef WSLAB_CLASSIC_LIBFORK
  Result libfork(lf::lazy_pool& pool) const { return lf::sync_wait(pool, solve_lf, n, Board{}, 0); }
#endif
  bool check(Result r) const { return r == kSolutions[std::size_t(n)]; }
};

}  // namespace classic::nqueens
