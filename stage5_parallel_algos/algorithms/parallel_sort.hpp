// parallel_sort(pool, first, last [, comp]): sorts a random-access range, not stably;
// parallel_sort(pool, range [, comp]) sorts a sized random-access range (range_splitter.hpp).
//
// A parallel quicksort: pick a pivot (median of three, or Tukey's ninther for large ranges),
// partition, then sort the two sides with join(). Long ranges are partitioned by two threads
// (partition_in_two); below a cut-off a side is sorted on one thread (sort_sequentially). Like
// introsort, a recursion that goes deeper than 2*log2(n) (an adversarial input beating the pivot
// choice) hands the range to std::sort, which guarantees O(n log n) and bounds the recursion depth.
//
// Two partitions, chosen by the element type:
// - Small trivially copyable elements (CheaplySelectable: ints, pointers, a struct of two ints) are
//   partitioned without a branch on the comparison (branch-free Lomuto, branchless_partition),
//   as in pdqsort; a second pass gathers the keys equal to the pivot when it is the range's
//   minimum, so all-equal input takes two passes instead of going quadratic. Their sequential
//   sorts are the same quicksort, down to insertion sort.
// - Other elements: Hoare's scheme, whose scans stop on keys equal to the pivot so that runs of
//   equal keys split evenly; sorted and reversed input get the true median from the median of
//   three; std::sort below the cut-off.
//
// Exceptions (from comp or from moving elements): sides not yet started are skipped, one
// exception is rethrown, and the range's contents are unspecified, as after std::sort throws (an
// insertion sort, ours or std::sort's, can leave a duplicate in place of the element it was
// holding). The partitions themselves only swap, so they never lose an element.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <functional>
#include <iterator>
#include <ranges>
#include <type_traits>
#include <utility>

#include "../../common/thread_pool.hpp"
#include "../fork_join/join.hpp"
#include "range_splitter.hpp"

namespace wslab {

// Ranges at most this long are sorted on one thread: a fork costs about as much as sorting a few
// hundred elements, and 2048 ints (8 KiB) sort within one core's L1.
inline constexpr std::size_t kParallelSortCutoff = 2048;

// What the range overloads of the sorts take: a sized random-access range whose elements can be
// assigned, so not a const one (std::sortable is missing from libc++ 14).
template <class R>
concept SortableRange =
    SizedRandomAccessRange<R> &&
    std::indirectly_writable<std::ranges::iterator_t<R>, std::ranges::range_value_t<R>>;

namespace detail {

// Elements cheap enough to copy that a loop can choose between two of them with a conditional
// move instead of a branch: ints, pointers, a struct of two ints (not std::pair, whose assignment
// is user-provided, so it is not trivially copyable). On random keys a comparison's branch is
// mispredicted about every other time, which costs more than the copies.
template <class T>
concept CheaplySelectable = std::is_trivially_copyable_v<T> && sizeof(T) <= 2 * sizeof(void*);

// Ranges at most this long are finished by insertion sort.
inline constexpr std::ptrdiff_t kInsertionSortRun = 16;

// Stable: an element moves left only past strictly greater ones.
template <class It, class Comp>
void insertion_sort(It first, It last, Comp& comp) {
  if (first == last) return;
  for (It next = first + 1; next != last; ++next) {
    auto value = std::move(*next);
    It hole = next;
    for (; hole != first && comp(value, *(hole - 1)); --hole)
      *hole = std::move(*(hole - 1));
    *hole = std::move(value);
  }
}

// Moves the elements satisfying `pred` to the front and returns the end of them, like
// std::partition, but without a branch on `pred`: every element is swapped with the boundary
// whether it belongs there or not, and the boundary advances by the predicate's 0 or 1 (Lomuto's
// scheme, branch-free). Swapping an element that stays behind is harmless: the boundary element
// it trades places with also stays behind. For CheaplySelectable elements only.
template <class It, class Pred>
It branchless_partition(It first, It last, Pred pred) {
  It boundary = first;
  for (It it = first; it != last; ++it) {
    const auto value = *it;
    const bool goes_first = pred(value);
    *it = *boundary;
    *boundary = value;
    boundary += goes_first;
  }
  return boundary;
}

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

// Moves a good pivot to *first: Tukey's ninther (the median of three medians of three, robust
// against organ-pipe and sawtooth inputs that defeat a plain median of three) for long ranges,
// the median of three otherwise. Needs at least 3 elements.
template <class It, class Comp>
void choose_pivot(It first, It last, Comp& comp) {
  using Diff = std::iter_difference_t<It>;
  const Diff n = last - first;
  const It mid = first + n / 2;
  if (n > 1024) {
    const Diff s = n / 8;
    const It m1 = median_of_three(first + 1, first + 1 + s, first + 1 + 2 * s, comp);
    const It m2 = median_of_three(mid - s, mid, mid + s, comp);
    const It m3 = median_of_three(last - 1 - 2 * s, last - 1 - s, last - 1, comp);
    move_median_to_first(first, m1, m2, m3, comp);
  } else {
    move_median_to_first(first, first + 1, mid, last - 1, comp);
  }
}

// Partitions the rest of the range around the pivot at *first (Hoare's scheme) and puts the
// pivot in its final place, which is returned: [first, p) <= pivot <= (p, last).
template <class It, class Comp>
It partition_around_pivot(It first, It last, Comp& comp) {
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

// What one partition step leaves to sort: [first, left_end) and [right_begin, last); everything
// between is in its final place.
template <class It>
struct PartitionResult {
  It left_end;
  It right_begin;
};

// Partitions [first, last) around a pivot that choose_pivot() put at *first.
//
// Cheaply selectable elements: branch-free Lomuto, strictly smaller elements to the left. That
// sends every element equal to the pivot to the right, so all-equal input would make no
// progress; when nothing is smaller (the pivot is the range's minimum), a second pass gathers
// the pivot's equals next to it, and they are done. Each distinct key can cost that extra pass
// at most once per range, so many equal keys sort in linear passes, as with Hoare's scheme.
//
// Other elements: Hoare's scheme (partition_around_pivot).
template <class It, class Comp>
PartitionResult<It> partition_step(It first, It last, Comp& comp) {
  choose_pivot(first, last, comp);
  if constexpr (CheaplySelectable<std::iter_value_t<It>>) {
    const auto pivot = *first;
    const It smaller_end =
        branchless_partition(first + 1, last, [&](const auto& x) { return bool(comp(x, pivot)); });
    const It pivot_at = smaller_end - 1;
    std::iter_swap(first, pivot_at);
    if (pivot_at != first) return {pivot_at, pivot_at + 1};
    const It equal_end =
        branchless_partition(first + 1, last, [&](const auto& x) { return !bool(comp(pivot, x)); });
    return {first, equal_end};
  } else {
    const It p = partition_around_pivot(first, last, comp);
    return {p, p + 1};  // the pivot is in its final place
  }
}

template <class It, class Pred>
It partition_by(It first, It last, Pred pred) {
  if constexpr (CheaplySelectable<std::iter_value_t<It>>) {
    return branchless_partition(first, last, pred);
  } else {
    return std::partition(first, last, pred);
  }
}

// Sorts a range on the calling thread. Cheaply selectable elements: quicksort with the
// branch-free partition_step, the smaller side first by recursion and the larger by looping (so
// the stack holds at most log2(n) frames), insertion sort for short ranges, and std::sort (whose
// heapsort fallback guarantees O(n log n)) past 2*log2(n) partitions. Other elements: std::sort.
template <class It, class Comp>
void sort_sequentially(It first, It last, Comp& comp) {
  if constexpr (CheaplySelectable<std::iter_value_t<It>>) {
    int depth_budget = 2 * static_cast<int>(std::bit_width(static_cast<std::size_t>(last - first)));
    while (last - first > kInsertionSortRun) {
      if (--depth_budget < 0) {
        std::sort(first, last, std::ref(comp));
        return;
      }
      const auto [left_end, right_begin] = partition_step(first, last, comp);
      if (left_end - first < last - right_begin) {
        sort_sequentially(first, left_end, comp);
        first = right_begin;
      } else {
        sort_sequentially(right_begin, last, comp);
        last = left_end;
      }
    }
    insertion_sort(first, last, comp);
  } else {
    std::sort(first, last, std::ref(comp));
  }
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
template <ForkJoinPool Pool, class It, class Comp>
It partition_in_two(Pool pool, It first, It last, Comp& comp) {
  using Value = std::iter_value_t<It>;
  using Diff = std::iter_difference_t<It>;
  const Diff n = last - first;
  const It mid = first + n / 2;
  choose_pivot(first, last, comp);  // the ninther, moved to *first (which A partitions too)
  const Value pivot = *first;
  const auto parts = join_context(
      pool,
      [&] { return partition_by(first, mid, [&](const auto& x) { return bool(comp(x, pivot)); }); },
      [&](bool) {
        return partition_by(mid, last, [&](const auto& x) { return !bool(comp(pivot, x)); });
      });
  // Plain variables, not a structured binding: the lambdas below capture them, which C++20
  // allows for bindings but clang 14 does not.
  const It a = parts.first;
  const It b = parts.second;
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

template <ForkJoinPool Pool, class It, class Comp>
void parallel_quicksort(Pool pool, It first, It last, Comp& comp, int depth_budget,
                        std::atomic<bool>& failed) {
  if (failed.load(std::memory_order_relaxed)) return;
  try {
    if (static_cast<std::size_t>(last - first) <= kParallelSortCutoff) {
      sort_sequentially(first, last, comp);
      return;
    }
    if (depth_budget <= 0) {  // an input that beats the pivot choice: O(n log n) guaranteed
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
      const auto step = partition_step(first, last, comp);
      left_end = step.left_end;
      right_begin = step.right_begin;
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
    detail::sort_sequentially(first, last, comp);
    return;
  }
  std::atomic<bool> failed{false};
  with_fork_join_pool(pool, [&](ForkJoinPool auto handle) {
    detail::parallel_quicksort(handle, first, last, comp, 2 * static_cast<int>(std::bit_width(n)),
                               failed);
  });
}

template <class R, class Comp = std::less<>>
  requires SortableRange<R>
void parallel_sort(IThreadPool& pool, R&& range, Comp comp = {}) {
  parallel_sort(pool, std::ranges::begin(range), detail::range_last(range), std::move(comp));
}

}  // namespace wslab
