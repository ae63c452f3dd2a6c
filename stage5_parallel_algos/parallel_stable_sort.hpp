// parallel_stable_sort(pool, first, last [, comp]): sorts a random-access range, stably (equal
// elements keep their order), like std::stable_sort.
//
// A parallel merge sort: the two halves are sorted with join(), then merged in place with
// std::inplace_merge, which keeps the left half's element first among equals; below the cut-off
// a side is handed to std::stable_sort. Both steps are stable, so the whole is.
//
// What it does not do: merge in parallel. Each merge runs on one thread, and the last one moves
// every element once, so on two threads the speedup over std::stable_sort stays under 2 (the
// sorts of the halves run in parallel, the final merge does not). A parallel merge (split both
// halves at a common rank, merge the two parts on two threads) is the next step if a profile asks
// for it.
//
// Exceptions (from comp or from moving elements): sides not yet started are skipped, one
// exception is rethrown, and the range's contents are unspecified, as after std::stable_sort
// throws (its merge buffer may hold elements that are then lost from the range).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <iterator>

#include "common/thread_pool.hpp"
#include "stage5_parallel_algos/join.hpp"
#include "stage5_parallel_algos/parallel_sort.hpp"

namespace wslab {

namespace detail {

template <class It, class Comp>
void parallel_merge_sort(IThreadPool& pool, It first, It last, Comp& comp,
                         std::atomic<bool>& failed) {
  if (failed.load(std::memory_order_relaxed)) return;
  const auto n = static_cast<std::size_t>(last - first);
  if (n <= kParallelSortCutoff) {
    std::stable_sort(first, last, std::ref(comp));
    return;
  }
  const It middle = first + static_cast<std::iter_difference_t<It>>(n / 2);
  try {
    join_context(
        pool, [&] { parallel_merge_sort(pool, first, middle, comp, failed); },
        [&pool, middle, last, &comp, &failed](bool) {
          parallel_merge_sort(pool, middle, last, comp, failed);
        });
    if (failed.load(std::memory_order_relaxed)) return;  // a sibling threw: its join rethrows
    std::inplace_merge(first, middle, last, std::ref(comp));
  } catch (...) {
    failed.store(true, std::memory_order_relaxed);  // a hint; the exception carries the news
    throw;
  }
}

}  // namespace detail

template <std::random_access_iterator It, class Comp = std::less<>>
void parallel_stable_sort(IThreadPool& pool, It first, It last, Comp comp = {}) {
  std::atomic<bool> failed{false};
  detail::parallel_merge_sort(pool, first, last, comp, failed);
}

}  // namespace wslab
