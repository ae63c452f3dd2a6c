// parallel_stable_sort(pool, first, last [, comp]): sorts a random-access range, stably (equal
// elements keep their order), like std::stable_sort; parallel_stable_sort(pool, range [, comp])
// sorts a sized random-access range (range_splitter.hpp).
//
// A merge sort that moves the elements between the range and one buffer of the same length, so
// that each level of the recursion moves every element once, and whose merges run in parallel
// too (without that, the last merge, every element moved once, would run on one thread while the
// others wait).
//
// - merge_sort_to(): sorts the two halves with join(), each into the *other* array, then merges
//   them back into the array the caller asked for. Below the cut-off a side is sorted the same
//   way on one thread (sequential_merge_sort_to), down to runs of 16 sorted by insertion.
// - parallel_merge(): splits a merge at a common rank. It takes the middle element of the longer
//   input and finds its place in the shorter one with a binary search: lower_bound when the pivot
//   comes from the left input, upper_bound when it comes from the right. Either way every element
//   equal to the pivot that comes from the left input lands in the first part, before the equals
//   from the right input, which is what keeps the merge stable. The two parts write to disjoint
//   stretches of the output and merge concurrently.
// - merge_moving(): the sequential merge. For small trivially copyable elements (ints, pointers,
//   a struct of two ints) it merges from both ends at once without branching on the comparison,
//   which is where most of the speed over std::stable_sort comes from (see its comment).
// - Every merge prefers the left input among equals, and insertion sort never moves an element
//   past an equal one, so the whole is stable.
//
// The buffer holds n default-initialised elements (for int: no writes at all). A value type that
// is not default-initialisable, or a buffer that cannot be allocated, falls back to sorting in
// place: halves sorted with join(), merged by std::inplace_merge (one thread per merge).
//
// Exceptions (from comp or from moving elements): sides not yet started are skipped, one
// exception is rethrown, and the range's contents are unspecified, as after std::stable_sort
// throws (elements may be left in the buffer, which is then destroyed).
#pragma once

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <new>
#include <ranges>
#include <type_traits>
#include <utility>

#include "../../common/thread_pool.hpp"
#include "../fork_join/join.hpp"
#include "parallel_sort.hpp"

namespace wslab {

// Merges of at most this many elements run on one thread: splitting one costs two binary
// searches and a fork, about what merging a few hundred elements costs, and below this size the
// sibling merges of the level already keep every thread busy.
inline constexpr std::size_t kParallelMergeCutoff = 16384;

namespace detail {

// A sequential stable merge: among equals the element of [first1, last1) goes first.
//
// Cheaply selectable elements are merged from both ends at once: the front picks the smallest
// remaining element, the back the largest, each without a branch on the comparison. Each step
// only depends on its own end's previous step, so the two run in parallel in the core. The ends
// never cross: every step
// consumes one remaining element and fills one free slot, and [out, out_back) always has as many
// slots as elements remain. Stability: on a tie the front takes the left element, the back the
// right one.
//
// Other elements are moved with a branch (not std::merge over move_iterators: a comparator
// taking its arguments by value would then move out of the elements it compares).
template <class In, class Out, class Comp>
void merge_moving(In first1, In last1, In first2, In last2, Out out, Comp& comp) {
  if constexpr (CheaplySelectable<std::iter_value_t<In>>) {
    Out out_back = out + ((last1 - first1) + (last2 - first2));
    while (first1 != last1 && first2 != last2) {
      const bool front_from_second = comp(*first2, *first1);
      *out = front_from_second ? *first2 : *first1;
      first2 += front_from_second;
      first1 += !front_from_second;
      ++out;
      if (first1 == last1 || first2 == last2) break;
      const bool back_from_first = comp(*(last2 - 1), *(last1 - 1));
      *--out_back = back_from_first ? *(last1 - 1) : *(last2 - 1);
      last1 -= back_from_first;
      last2 -= !back_from_first;
    }
  } else {
    while (first1 != last1 && first2 != last2) {
      if (comp(*first2, *first1)) {
        *out = std::move(*first2);
        ++first2;
      } else {
        *out = std::move(*first1);
        ++first1;
      }
      ++out;
    }
  }
  // One input is used up; the other's rest fills the slots left, in order.
  out = std::move(first1, last1, out);
  std::move(first2, last2, out);
}

// merge_sort_to() below a fork's worth of work: the same ping-pong, on one thread, down to runs
// short enough for insertion sort.
template <class It, class Buf, class Comp>
void sequential_merge_sort_to(It first, It last, Buf buffer, bool into_buffer, Comp& comp) {
  const auto n = last - first;
  if (n <= kInsertionSortRun) {  // runs this short: insertion sort (parallel_sort.hpp)
    insertion_sort(first, last, comp);
    if (into_buffer) std::move(first, last, buffer);
    return;
  }
  const auto half = n / 2;
  const It middle = first + half;
  const Buf buffer_middle = buffer + half;
  sequential_merge_sort_to(first, middle, buffer, !into_buffer, comp);
  sequential_merge_sort_to(middle, last, buffer_middle, !into_buffer, comp);
  if (into_buffer) {
    merge_moving(first, middle, middle, last, buffer, comp);
  } else {
    merge_moving(buffer, buffer_middle, buffer_middle, buffer + n, first, comp);
  }
}

template <ForkJoinPool Pool, class In, class Out, class Comp>
void parallel_merge(Pool pool, In first1, In last1, In first2, In last2, Out out, Comp& comp) {
  const auto n1 = last1 - first1;
  const auto n2 = last2 - first2;
  if (static_cast<std::size_t>(n1 + n2) <= kParallelMergeCutoff) {
    merge_moving(first1, last1, first2, last2, out, comp);
    return;
  }
  In cut1;
  In cut2;
  if (n1 >= n2) {
    cut1 = first1 + n1 / 2;
    // Right-input elements equal to the pivot go after it: to the second part.
    cut2 = std::lower_bound(first2, last2, *cut1, std::ref(comp));
  } else {
    cut2 = first2 + n2 / 2;
    // Left-input elements equal to the pivot go before it: to the first part.
    cut1 = std::upper_bound(first1, last1, *cut2, std::ref(comp));
  }
  const Out out_cut = out + ((cut1 - first1) + (cut2 - first2));
  join_context(
      pool, [&] { parallel_merge(pool, first1, cut1, first2, cut2, out, comp); },
      [&pool, cut1, last1, cut2, last2, out_cut, &comp](bool) {
        parallel_merge(pool, cut1, last1, cut2, last2, out_cut, comp);
      });
}

// Sorts [first, last) stably. The sorted elements end in [first, last) if !into_buffer, else in
// [buffer, buffer + n); the other array is scratch space. The halves are sorted into the array
// this call does not end in, so the merge moves them across.
template <ForkJoinPool Pool, class It, class Buf, class Comp>
void merge_sort_to(Pool pool, It first, It last, Buf buffer, bool into_buffer, Comp& comp,
                   std::atomic<bool>& failed) {
  if (failed.load(std::memory_order_relaxed)) return;
  const auto n = last - first;
  if (static_cast<std::size_t>(n) <= kParallelSortCutoff) {
    sequential_merge_sort_to(first, last, buffer, into_buffer, comp);
    return;
  }
  const auto half = n / 2;
  const It middle = first + half;
  const Buf buffer_middle = buffer + half;
  try {
    join_context(
        pool, [&] { merge_sort_to(pool, first, middle, buffer, !into_buffer, comp, failed); },
        [&pool, middle, last, buffer_middle, into_buffer, &comp, &failed](bool) {
          merge_sort_to(pool, middle, last, buffer_middle, !into_buffer, comp, failed);
        });
    if (failed.load(std::memory_order_relaxed)) return;  // a sibling threw: its join rethrows
    if (into_buffer) {
      parallel_merge(pool, first, middle, middle, last, buffer, comp);
    } else {
      parallel_merge(pool, buffer, buffer_middle, buffer_middle, buffer + n, first, comp);
    }
  } catch (...) {
    failed.store(true, std::memory_order_relaxed);  // a hint; the exception carries the news
    throw;
  }
}

// The fallback without a buffer: halves sorted in parallel, merged in place on one thread.
template <ForkJoinPool Pool, class It, class Comp>
void inplace_merge_sort(Pool pool, It first, It last, Comp& comp, std::atomic<bool>& failed) {
  if (failed.load(std::memory_order_relaxed)) return;
  const auto n = static_cast<std::size_t>(last - first);
  if (n <= kParallelSortCutoff) {
    std::stable_sort(first, last, std::ref(comp));
    return;
  }
  const It middle = first + static_cast<std::iter_difference_t<It>>(n / 2);
  try {
    join_context(
        pool, [&] { inplace_merge_sort(pool, first, middle, comp, failed); },
        [&pool, middle, last, &comp, &failed](bool) {
          inplace_merge_sort(pool, middle, last, comp, failed);
        });
    if (failed.load(std::memory_order_relaxed)) return;
    std::inplace_merge(first, middle, last, std::ref(comp));
  } catch (...) {
    failed.store(true, std::memory_order_relaxed);
    throw;
  }
}

}  // namespace detail

template <std::random_access_iterator It, class Comp = std::less<>>
void parallel_stable_sort(IThreadPool& pool, It first, It last, Comp comp = {}) {
  using Value = std::iter_value_t<It>;
  const auto n = static_cast<std::size_t>(last - first);
  if (n <= kParallelSortCutoff) {
    std::stable_sort(first, last, std::ref(comp));
    return;
  }
  std::atomic<bool> failed{false};
  with_fork_join_pool(pool, [&](ForkJoinPool auto handle) {
    if constexpr (std::default_initializable<Value>) {
      // Default-initialised, not value-initialised: for trivial types the buffer is never
      // written before the sort's first move into it.
      std::unique_ptr<Value[]> buffer(new (std::nothrow) Value[n]);
      if (buffer) {
        detail::merge_sort_to(handle, first, last, buffer.get(), false, comp, failed);
        return;
      }
    }
    detail::inplace_merge_sort(handle, first, last, comp, failed);
  });
}

template <class R, class Comp = std::less<>>
  requires SortableRange<R>
void parallel_stable_sort(IThreadPool& pool, R&& range, Comp comp = {}) {
  parallel_stable_sort(pool, std::ranges::begin(range), detail::range_last(range), std::move(comp));
}

}  // namespace wslab
