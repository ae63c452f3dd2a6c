// Callables whose types the algorithm tests share. Each call of an algorithm with a callable of a
// new type instantiates the whole fork-join machinery under it (split_and_run, join_context, the
// job types), and the compile time of these tests is in those instantiations. So a test that is
// not about the callable's own type passes one of these: all its calls, and those of the other
// tests, then reuse one instantiation per signature. Each costs an indirect call per element,
// which none of these tests measures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace wslab::test {

// f(index) for parallel_for's index form, one per index type.
using IndexFn = std::function<void(std::size_t)>;
using IntIndexFn = std::function<void(int)>;

// f(element&) for parallel_for's iterator and range forms.
template <class T>
using ElementFn = std::function<void(T&)>;

// chunk(lo, hi) of a leaf run directly (detail::run_timed_leaf), and fold(lo, hi) of a reduce leaf
// (detail::reduce_timed_leaf).
using ChunkFn = std::function<void(std::size_t, std::size_t)>;
template <class T>
using FoldFn = std::function<T(std::size_t, std::size_t)>;

// map(element) for the transform-reduces: R from a T.
template <class R, class T>
using MapFn = std::function<R(const T&)>;

// A binary op for the reductions over T. (No std::function for the sorts' comparators: clang 14
// cannot instantiate libstdc++'s std::sort with one, which it wraps in a std::reference_wrapper.)
template <class T>
using BinaryOp = std::function<T(T, T)>;

// The hungry() of a leaf run directly: it always is, so the leaf splits at every step.
struct AlwaysHungry {
  bool operator()() const noexcept { return true; }
};

}  // namespace wslab::test
