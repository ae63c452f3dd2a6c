// parallel_reduce(pool, first, last, init, op): the meaning of std::reduce(first, last, init, op):
// init and the elements combined with op in an unspecified grouping and order, so op must be
// associative and commutative. parallel_transform_reduce(..., op, map) reduces map(element).
//
// Each piece of the range (split as in parallel_for.hpp) folds its elements sequentially, seeded
// with its first element, so no identity element is needed; the halves are combined with op as
// the join tree unwinds, and init joins last.
//
// On a ChaseLevPool with the adaptive grain, a running piece is split again when a worker goes
// idle (IdleProbe in range_splitter.hpp); its blocks are combined with op in order.
//
// Exceptions (from op or map): as in parallel_for: pieces not started are skipped, one exception
// (the leftmost thrown in the split tree) is rethrown.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <iterator>
#include <optional>
#include <type_traits>
#include <utility>

#include "common/thread_pool.hpp"
#include "stage5_parallel_algos/join.hpp"
#include "stage5_parallel_algos/range_splitter.hpp"

namespace wslab {

namespace detail {

// The fold of [lo, hi), or nothing if the piece was skipped after a failure elsewhere.
template <class T, class Fold, class Op>
std::optional<T> split_and_reduce(IThreadPool& pool, std::size_t lo, std::size_t hi,
                                  RangeSplitter splitter, bool migrated, Fold& fold, Op& op,
                                  std::atomic<bool>& failed) {
  if (failed.load(std::memory_order_relaxed)) return std::nullopt;
  if (splitter.should_split(hi - lo, migrated)) {
    const std::size_t mid = lo + (hi - lo) / 2;
    auto [left, right] = join_context(
        pool, [&] { return split_and_reduce<T>(pool, lo, mid, splitter, false, fold, op, failed); },
        [&pool, mid, hi, splitter, &fold, &op, &failed](bool stolen) {
          return split_and_reduce<T>(pool, mid, hi, splitter, stolen, fold, op, failed);
        });
    if (!left || !right) return std::nullopt;
    return std::optional<T>(std::invoke(op, std::move(*left), std::move(*right)));
  }
  std::optional<T> done;  // the fold of the blocks run so far
  bool split_rest = false;
  try {
    split_rest = IdleProbe(pool, splitter).run_blocks(lo, hi, [&](std::size_t a, std::size_t b) {
      T part = fold(a, b);
      T merged = done ? std::invoke(op, std::move(*done), std::move(part)) : std::move(part);
      done.emplace(std::move(merged));
    });
    if (!split_rest) {
      T part = fold(lo, hi);
      if (!done) return std::optional<T>(std::move(part));
      return std::optional<T>(std::invoke(op, std::move(*done), std::move(part)));
    }
  } catch (...) {
    failed.store(true, std::memory_order_relaxed);  // a hint only; the exception carries the news
    throw;
  }
  // A worker went idle while this piece ran: split what is left as if it had been stolen.
  std::optional<T> rest = split_and_reduce<T>(pool, lo, hi, splitter, true, fold, op, failed);
  if (!rest) return std::nullopt;
  return std::optional<T>(std::invoke(op, std::move(*done), std::move(*rest)));
}

}  // namespace detail

template <std::random_access_iterator It, class T, class Op, class Map>
T parallel_transform_reduce(IThreadPool& pool, It first, It last, T init, Op op, Map map,
                            std::size_t grain = 0) {
  if (!(first < last)) return init;
  const auto n = static_cast<std::size_t>(last - first);
  using Diff = std::iter_difference_t<It>;
  auto fold = [&](std::size_t lo, std::size_t hi) -> T {
    It it = first + static_cast<Diff>(lo);
    const It stop = first + static_cast<Diff>(hi);
    T acc = static_cast<T>(std::invoke(map, *it));
    for (++it; it != stop; ++it)
      acc = std::invoke(op, std::move(acc), std::invoke(map, *it));
    return acc;
  };
  std::atomic<bool> failed{false};
  std::optional<T> total = detail::split_and_reduce<T>(
      pool, 0, n, RangeSplitter(grain, pool.thread_count()), true, fold, op, failed);
  return std::invoke(op, std::move(init), std::move(*total));
}

template <std::random_access_iterator It, class T, class Op = std::plus<>>
T parallel_reduce(IThreadPool& pool, It first, It last, T init, Op op = {}, std::size_t grain = 0) {
  return parallel_transform_reduce(
      pool, first, last, std::move(init), std::move(op),
      [](auto&& x) -> decltype(auto) { return std::forward<decltype(x)>(x); }, grain);
}

}  // namespace wslab
