// parallel_sort(pool, first, last [, comp]): sorts a random-access range, not stably.
//
// A parallel quicksort: pick a pivot (median of three, or Tukey's ninther for large ranges),
// partition with Hoare's scheme (long ranges: two threads partition one half each, see
// partition_in_two), then sort the two sides with join(). Below a
// cut-off the side is handed to std::sort. Hoare's partition swaps elements equal to the pivot
// to both sides, so all-equal input splits evenly instead of going quadratic; sorted and
// reversed input get the true median from the median-of-three. Like introsort, a recursion that
// goes deeper than 2*log2(n) (an adversarial input beating the pivot choice) hands the range to
// std::sort, which guarantees O(n log n) and bounds the recursion depth.
//
// Exceptions (from comp or from moving elements): sides not yet started are skipped, one
// exception is rethrown, and the range's contents are unspecified, as after std::sort throws (its
// insertion step can leave a duplicate in place of the element it was holding). The partitions
// themselves only swap, so they never lose an element.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <functional>
#include <iterator>
#include <type_traits>
#include <utility>

#include "common/thread_pool.hpp"
#include "stage5_parallel_algos/join.hpp"

namespace wslab {

// Ranges at most this long are sorted by std::sort: a fork costs about as much as sorting a few
// hundred elements, and 2048 ints (8 KiB) sort within one core's L1.
inline constexpr std::size_t kParallelSortCutoff = 2048;

namespace detail {

template <class It, class Comp>
void move_median_to_first(It first, It a, It b, It c, Comp& comp) {
  // Puts the median of *a, *b, *c at *first.
  if (comp(*a, *b)) {
    if (comp(*b, *c)) {
      std::iter_swap(first, b);
    } else if (comp(*a, *c)) {
      std::iter_swap(first, c);
    } else {
      std::iter_swap(first, a);
    }
  } else if (comp(*a, *c)) {
    std::iter_swap(first, a);
  } else if (comp(*b, *c)) {
    std::iter_swap(first, c);
  } else {
    std::iter_swap(first, b);
  }
}

template <class It, class Comp>
It median_of_three(It a, It b, It c, Comp& comp) {
  if (comp(*a, *b)) {
    if (comp(*b, *c)) return b;
    return comp(*a, *c) ? c : a;
  }
  if (comp(*a, *c)) return a;
  return comp(*b, *c) ? c : b;
}

// Moves a good pivot to *first, partitions the rest around it and puts it in its final place,
// which is returned: [first, p) <= pivot <= (p, last).
template <class It, class Comp>
It partition_around_pivot(It first, It last, Comp& comp) {
  using Diff = std::iter_difference_t<It>;
  const Diff n = last - first;
  const It mid = first + n / 2;
  if (n > 1024) {
    // Tukey's ninther: the median of three medians of three, robust against organ-pipe and
    // sawtooth inputs that defeat a plain median of three.
    const Diff s = n / 8;
    const It m1 = median_of_three(first + 1, first + 1 + s, first + 1 + 2 * s, comp);
    const It m2 = median_of_three(mid - s, mid, mid + s, comp);
    const It m3 = median_of_three(last - 1 - 2 * s, last - 1 - s, last - 1, comp);
    move_median_to_first(first, m1, m2, m3, comp);
  } else {
    move_median_to_first(first, first + 1, mid, last - 1, comp);
  }
  // Hoare's scheme. Both scans stop on elements equal to the pivot, so runs of equal keys are
  // swapped to both sides and split evenly. The bounds checks keep a comparator that is not a
  // strict weak ordering from walking off the range (it then sorts wrongly, never out of bounds).
  It i = first;
  It j = last;
  for (;;) {
    do {
      ++i;
    } while (i < j && comp(*i, *first));
    do {
      --j;
    } while (j > first && comp(*first, *j));
    if (i >= j) break;
    std::iter_swap(i, j);
  }
  std::iter_swap(first, j);
  return j;
}

// Partitions a long range with two threads instead of one, so that the first levels of the sort
// do not leave the other workers idle (the top-level partition touches every element; done alone
// it is the sort's sequential part). The two halves are partitioned at the same time around the
// same pivot value, then the misplaced middle blocks are swapped:
//
//     [ lo(A) | hi(A) | lo(B) | hi(B) ]  ->  [ lo(A) | lo(B) | hi(A) | hi(B) ]
//
// A keeps elements equal to the pivot on its high side and B on its low side, so runs of equal
// keys still split between the two sides. Returns the split point m: [first, m) <= pivot <=
// [m, last). If one side came out empty (no progress), returns `last` and the caller partitions
// sequentially instead.
template <class It, class Comp>
It partition_in_two(IThreadPool& pool, It first, It last, Comp& comp) {
  using Value = std::iter_value_t<It>;
  using Diff = std::iter_difference_t<It>;
  const Diff n = last - first;
  const Diff s = n / 8;
  const It mid = first + n / 2;
  const It pivot_at =
      median_of_three(median_of_three(first + 1, first + 1 + s, first + 1 + 2 * s, comp),
                      median_of_three(mid - s, mid, mid + s, comp),
                      median_of_three(last - 1 - 2 * s, last - 1 - s, last - 1, comp), comp);
  const Value pivot = *pivot_at;
  auto [a, b] = join_context(
      pool,
      [&] {
        return std::partition(first, mid, [&](const auto& x) { return bool(comp(x, pivot)); });
      },
      [&](bool) {
        return std::partition(mid, last, [&](const auto& x) { return !bool(comp(pivot, x)); });
      });
  // hi(A) is [a, mid), lo(B) is [mid, b): swap the shorter one with the far end of the other.
  const Diff k = std::min(mid - a, b - mid);
  const It m = a + (b - mid);
  if (k > 0) {
    const Diff half = k / 2;
    join_context(
        pool, [&] { std::swap_ranges(a, a + half, b - k); },
        [&](bool) { std::swap_ranges(a + half, a + k, b - k + half); });
  }
  if (m == first || m == last) return last;
  return m;
}

// Above this length a partition is split between two threads (partition_in_two).
inline constexpr std::size_t kSplitPartitionAbove = std::size_t{1} << 17;

template <class It, class Comp>
void parallel_quicksort(IThreadPool& pool, It first, It last, Comp& comp, int depth_budget,
                        std::atomic<bool>& failed) {
  if (failed.load(std::memory_order_relaxed)) return;
  try {
    if (static_cast<std::size_t>(last - first) <= kParallelSortCutoff || depth_budget <= 0) {
      std::sort(first, last, std::ref(comp));
      return;
    }
    It left_end = last;  // [first, left_end) and [right_begin, last) remain to be sorted
    It right_begin = last;
    // The split partition keeps a copy of the pivot value: move-only elements skip it.
    if constexpr (std::is_copy_constructible_v<std::iter_value_t<It>>) {
      if (static_cast<std::size_t>(last - first) > kSplitPartitionAbove &&
          pool.thread_count() > 1) {
        left_end = right_begin = partition_in_two(pool, first, last, comp);
      }
    }
    if (left_end == last) {  // short, one thread, or no progress: partition sequentially
      const It p = partition_around_pivot(first, last, comp);
      left_end = p;
      right_begin = p + 1;  // the pivot is in its final place
    }
    join_context(
        pool, [&] { parallel_quicksort(pool, first, left_end, comp, depth_budget - 1, failed); },
        [&pool, right_begin, last, &comp, depth_budget, &failed](bool) {
          parallel_quicksort(pool, right_begin, last, comp, depth_budget - 1, failed);
        });
  } catch (...) {
    failed.store(true, std::memory_order_relaxed);  // a hint; the exception carries the news
    throw;
  }
}

}  // namespace detail

template <std::random_access_iterator It, class Comp = std::less<>>
void parallel_sort(IThreadPool& pool, It first, It last, Comp comp = {}) {
  const auto n = static_cast<std::size_t>(last - first);
  if (n <= kParallelSortCutoff) {
    std::sort(first, last, std::ref(comp));
    return;
  }
  std::atomic<bool> failed{false};
  detail::parallel_quicksort(pool, first, last, comp, 2 * static_cast<int>(std::bit_width(n)),
                             failed);
}

}  // namespace wslab
