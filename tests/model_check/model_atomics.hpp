// ModelAtomics: the atomics policy (same shape as StdAtomics) whose atomic<T>, fences and futex
// epoch are steps of the model checker (model_checker.hpp). A structure that takes its atomics as
// a policy runs under the checker unchanged. Each operation records the function and line it is
// called from (the compiler's __builtin_FUNCTION/__builtin_LINE as default arguments), for the
// trace and for Options::weaken.
#pragma once

#include <atomic>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "model_checker.hpp"

namespace wslab::model {

template <class T>
class atomic {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(std::uint64_t));
  using Bits = detail::Bits;

 public:
  static constexpr bool is_always_lock_free = true;

  atomic() noexcept : atomic(T{}) {}
  atomic(T value, const char* fn = __builtin_FUNCTION(), int line = __builtin_LINE()) noexcept
      : id_(detail::explorer().create(bits(value), fn, line)) {}
  atomic(const atomic&) = delete;
  atomic& operator=(const atomic&) = delete;

  T load(std::memory_order order = std::memory_order_seq_cst, const char* fn = __builtin_FUNCTION(),
         int line = __builtin_LINE()) const noexcept {
    return of(detail::explorer().load(id_, order, fn, line));
  }
  void store(T value, std::memory_order order = std::memory_order_seq_cst,
             const char* fn = __builtin_FUNCTION(), int line = __builtin_LINE()) noexcept {
    detail::explorer().store(id_, bits(value), order, fn, line);
  }
  T exchange(T value, std::memory_order order = std::memory_order_seq_cst,
             const char* fn = __builtin_FUNCTION(), int line = __builtin_LINE()) noexcept {
    const Bits b = bits(value);
    return of(detail::explorer().rmw(id_, [b](Bits) { return b; }, order, "exchange", fn, line));
  }
  bool compare_exchange_strong(T& expected, T desired, std::memory_order success,
                               std::memory_order failure, const char* fn = __builtin_FUNCTION(),
                               int line = __builtin_LINE()) noexcept {
    return cas(expected, desired, success, failure, "compare_exchange_strong", fn, line);
  }
  bool compare_exchange_strong(T& expected, T desired,
                               std::memory_order order = std::memory_order_seq_cst,
                               const char* fn = __builtin_FUNCTION(),
                               int line = __builtin_LINE()) noexcept {
    return cas(expected, desired, order, failure_order(order), "compare_exchange_strong", fn, line);
  }
  // Never fails spuriously here (a subset of what the standard allows).
  bool compare_exchange_weak(T& expected, T desired, std::memory_order success,
                             std::memory_order failure, const char* fn = __builtin_FUNCTION(),
                             int line = __builtin_LINE()) noexcept {
    return cas(expected, desired, success, failure, "compare_exchange_weak", fn, line);
  }
  bool compare_exchange_weak(T& expected, T desired,
                             std::memory_order order = std::memory_order_seq_cst,
                             const char* fn = __builtin_FUNCTION(),
                             int line = __builtin_LINE()) noexcept {
    return cas(expected, desired, order, failure_order(order), "compare_exchange_weak", fn, line);
  }
  T fetch_add(T delta, std::memory_order order = std::memory_order_seq_cst,
              const char* fn = __builtin_FUNCTION(), int line = __builtin_LINE()) noexcept
    requires std::integral<T>
  {
    return of(detail::explorer().rmw(
        id_, [delta](Bits old) { return bits(static_cast<T>(of(old) + delta)); }, order,
        "fetch_add", fn, line));
  }
  T fetch_sub(T delta, std::memory_order order = std::memory_order_seq_cst,
              const char* fn = __builtin_FUNCTION(), int line = __builtin_LINE()) noexcept
    requires std::integral<T>
  {
    return of(detail::explorer().rmw(
        id_, [delta](Bits old) { return bits(static_cast<T>(of(old) - delta)); }, order,
        "fetch_sub", fn, line));
  }

  int location() const noexcept { return id_; }

 private:
  static Bits bits(T value) noexcept {
    Bits b = 0;
    std::memcpy(&b, &value, sizeof(T));
    return b;
  }
  static T of(Bits b) noexcept {
    T value;
    std::memcpy(&value, &b, sizeof(T));
    return value;
  }
  static std::memory_order failure_order(std::memory_order o) noexcept {
    if (o == std::memory_order_acq_rel) return std::memory_order_acquire;
    if (o == std::memory_order_release) return std::memory_order_relaxed;
    return o;
  }
  bool cas(T& expected, T desired, std::memory_order success, std::memory_order failure,
           const char* what, const char* fn, int line) noexcept {
    Bits e = bits(expected);
    const bool ok = detail::explorer().cas(id_, e, bits(desired), success, failure, what, fn, line);
    expected = of(e);
    return ok;
  }

  int id_;
};

// FutexEpoch's interface (ticket, wait, bump_and_wake) on a model atomic and the model futex.
class FutexEpoch {
 public:
  using Ticket = std::uint32_t;
  Ticket ticket(const char* fn = __builtin_FUNCTION(), int line = __builtin_LINE()) const noexcept {
    return word_.load(std::memory_order_seq_cst, fn, line);
  }
  void wait(Ticket ticket, const char* fn = __builtin_FUNCTION(),
            int line = __builtin_LINE()) noexcept {
    detail::explorer().futex_wait(word_.location(), ticket, fn, line);
  }
  void bump_and_wake(int how_many, const char* fn = __builtin_FUNCTION(),
                     int line = __builtin_LINE()) noexcept {
    word_.fetch_add(1, std::memory_order_seq_cst, fn, line);
    detail::explorer().futex_wake(word_.location(), how_many, fn, line);
  }

 private:
  atomic<std::uint32_t> word_{0};
};

struct ModelAtomics {
  template <class T>
  using atomic = model::atomic<T>;
  static void thread_fence(std::memory_order order, const char* fn = __builtin_FUNCTION(),
                           int line = __builtin_LINE()) noexcept {
    detail::explorer().fence(order, fn, line);
  }
};

}  // namespace wslab::model
