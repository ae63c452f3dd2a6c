// wslab::Task: the unit of work every pool queues. A move-only `void()` callable, one cache line
// big, that stores small callables inline so that submitting a typical lambda (a few pointers and
// integers) does not allocate. Larger or throwing-move callables go to the heap.
//
// Why not std::function? It requires copyable callables (a task that owns a unique_ptr or a
// promise could not be queued) and its small buffer is only 16 bytes in libstdc++.
// std::move_only_function would do, but it is C++23.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstring>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

namespace wslab {

namespace detail {
template <class F>
inline constexpr bool is_std_function_v = false;
template <class Signature>
inline constexpr bool is_std_function_v<std::function<Signature>> = true;

// A null function pointer or an empty std::function: what std::function calls "no target".
template <class F>
constexpr bool has_no_target(const F& fn) noexcept {
  using Fn = std::remove_cvref_t<F>;
  if constexpr (std::is_pointer_v<Fn> || is_std_function_v<Fn>) {
    return !fn;
  } else {
    return false;
  }
}
}  // namespace detail

class Task {
 public:
  // 56 bytes of inline storage + the ops pointer = 64: one task, one cache line. (A task group's
  // callable rides with its group's pointer, so 56 keeps a 48-byte lambda inline there too.)
  static constexpr std::size_t kInlineSize = 56;
  static constexpr std::size_t kInlineAlign = alignof(std::max_align_t);

  template <class F>
  static constexpr bool stored_inline = sizeof(F) <= kInlineSize && alignof(F) <= kInlineAlign &&
                                        std::is_nothrow_move_constructible_v<F>;

  // An empty task: it holds no callable and cannot be run or submitted.
  Task() noexcept = default;

  // Wraps fn. A null function pointer or an empty std::function gives an empty task, as it gives
  // an empty std::function.
  template <class F>
    requires(!std::same_as<std::remove_cvref_t<F>, Task> && std::invocable<std::decay_t<F>&> &&
             std::move_constructible<std::decay_t<F>>)
  Task(F&& fn) {  // NOLINT(google-explicit-constructor): tasks are built from lambdas implicitly
    using Fn = std::decay_t<F>;
    if (detail::has_no_target(fn)) return;
    build<Fn>([&]() -> Fn { return Fn(std::forward<F>(fn)); });
  }

  // Holds the callable make() returns, built where it is stored (C++17's guaranteed copy elision):
  // no move of it, where Task(make()) would move it once. For a callable made right where it is
  // queued (a task group's, which wraps the user's lambda with the group's pointer).
  template <class Make, class Fn = std::invoke_result_t<Make&>>
    requires(std::invocable<Fn&> && std::move_constructible<Fn>)
  Task(std::in_place_t, Make&& make) {
    build<Fn>(make);
  }

  [[gnu::always_inline]] Task(Task&& other) noexcept { take(other); }

  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }

  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;

  ~Task() { reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }

  // Runs the callable. Precondition: the task is not empty. May throw whatever the callable
  // throws; the pools catch it and hand it to wait_idle().
  void operator()() { ops_->invoke(storage_); }

  // Destroys the callable (and whatever it captured) now; the task becomes empty.
  void reset() noexcept {
    if (ops_ != nullptr) {
      if (ops_->destroy != nullptr) ops_->destroy(storage_);
      ops_ = nullptr;
    }
  }

 private:
  struct Ops {
    void (*invoke)(void* storage);
    // Moves the callable from `src` into raw storage `dst` and ends its life in `src`.
    // nullptr means the bytes may simply be copied (trivially relocatable).
    void (*relocate)(void* dst, void* src) noexcept;
    // nullptr means nothing to do (trivially destructible inline callable).
    void (*destroy)(void* storage) noexcept;
  };

  // Builds the callable make() returns (a prvalue: built where it lands), inline or on the heap.
  template <class Fn, class Make>
  [[gnu::always_inline]] void build(Make&& make) {
    if constexpr (stored_inline<Fn>) {
      ::new (static_cast<void*>(storage_)) Fn(make());
      ops_ = &kInlineOps<Fn>;
    } else {
      Fn* heap = new Fn(make());
      std::memcpy(storage_, &heap, sizeof(heap));
      ops_ = &kHeapOps<Fn>;
    }
  }

  template <class Fn>
  static Fn* inline_object(void* storage) noexcept {
    return std::launder(static_cast<Fn*>(storage));
  }
  template <class Fn>
  static Fn* heap_object(void* storage) noexcept {
    Fn* p;
    std::memcpy(&p, storage, sizeof(p));
    return p;
  }

  template <class Fn>
  static constexpr Ops kInlineOps{
      [](void* s) { std::invoke(*inline_object<Fn>(s)); },
      std::is_trivially_copyable_v<Fn> ? nullptr
                                       : +[](void* dst, void* src) noexcept {
                                           Fn* from = inline_object<Fn>(src);
                                           ::new (dst) Fn(std::move(*from));
                                           from->~Fn();
                                         },
      std::is_trivially_destructible_v<Fn>
          ? nullptr
          : +[](void* s) noexcept { inline_object<Fn>(s)->~Fn(); }};

  template <class Fn>
  static constexpr Ops kHeapOps{[](void* s) { std::invoke(*heap_object<Fn>(s)); },
                                nullptr,  // only the pointer moves
                                [](void* s) noexcept { delete heap_object<Fn>(s); }};

  [[gnu::always_inline]] void take(Task& other) noexcept {
    ops_ = std::exchange(other.ops_, nullptr);
    if (ops_ == nullptr) return;
    if (ops_->relocate == nullptr) {
      // The whole buffer whatever the callable's size: one fixed-size copy. The bytes past the
      // callable are copied uninitialised, harmlessly (unsigned char), which g++ may warn about.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
      std::memcpy(storage_, other.storage_, kInlineSize);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
    } else {
      ops_->relocate(storage_, other.storage_);
    }
  }

  alignas(kInlineAlign) unsigned char storage_[kInlineSize];
  const Ops* ops_ = nullptr;
};

static_assert(sizeof(Task) == 64, "a task should fill exactly one cache line");

// True for a callable that cannot be run: an empty Task, a null function pointer or an empty
// std::function. Every pool refuses one at submission (require_task() in thread_pool.hpp) rather
// than fail later on a worker. Known at compile time to be false for anything else (a lambda).
template <class F>
constexpr bool is_empty_callable(const F& fn) noexcept {
  if constexpr (std::same_as<std::remove_cvref_t<F>, Task>) {
    return !fn;
  } else {
    return detail::has_no_target(fn);
  }
}

static_assert(sizeof(Task) == 64, "a task is one cache line");

}  // namespace wslab
