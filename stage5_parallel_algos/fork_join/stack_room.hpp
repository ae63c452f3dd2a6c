// Keeping recursion off the end of a thread's stack. Two floors per thread: above help_floor
// (half the stack used) a waiter may help (help_bounds.hpp); below overflow_floor (three
// quarters used) the program's own recursion moves to a fresh stack (with_stack_room()).
#pragma once

#include <pthread.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

#include "../../common/worker_identity.hpp"
#include "current_pool.hpp"
#include "thread_record.hpp"

namespace wslab {

namespace detail {

[[gnu::cold]] inline void measure_stack_floors() noexcept {
  StackFloors f{1, 1};  // bounds unknown: the floors never trigger, the depth bound still does
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    std::size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0 && size != 0) {
      const auto low = reinterpret_cast<std::uintptr_t>(addr);
      f.help_floor = low + size / 2;
      f.overflow_floor = low + size / 4;
      f.top = low + size;
    }
    pthread_attr_destroy(&attr);
  }
  this_fork_join_thread.stack_floors = f;
}

// Filled on first use, so the hot check is one TLS load and one compare.
inline const StackFloors& this_thread_stack_floors() noexcept {
  if (this_fork_join_thread.stack_floors.help_floor == 0) [[unlikely]]
    measure_stack_floors();
  return this_fork_join_thread.stack_floors;
}

// The stack register, not a local's address: under AddressSanitizer locals may live on a fake
// stack. Read directly where we can, because __builtin_frame_address(0) makes every function that
// inlines a fork's check set up a frame pointer (three instructions and a register per call).
[[gnu::always_inline]] inline std::uintptr_t stack_pointer() noexcept {
#if defined(__x86_64__)
  std::uintptr_t sp;
  asm("mov %%rsp, %0" : "=r"(sp));
  return sp;
#elif defined(__aarch64__)
  std::uintptr_t sp;
  asm("mov %0, sp" : "=r"(sp));
  return sp;
#else
  return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
#endif
}

// Whether the stack register is below `floor`, a floor in memory (a thread-local): the register
// compared with the memory operand, where stack_pointer() < floor would first copy the register
// into another, a move on every fork. The flags come out of the asm (GCC's and Clang's flag
// outputs), so the compare feeds the fork's branch directly.
[[gnu::always_inline]] inline bool stack_below(const std::uintptr_t& floor) noexcept {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool below;
  asm("cmp %1, %%rsp" : "=@ccb"(below) : "m"(floor));
  return below;
#else
  return stack_pointer() < floor;
#endif
}

// The same for a floor the caller holds in a register (a WorkerRef's): an "r" operand, not "rm",
// which Clang reads as memory, storing the register to the stack on every fork to compare it there.
[[gnu::always_inline]] inline bool stack_below_held(std::uintptr_t floor) noexcept {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool below;
  asm("cmp %1, %%rsp" : "=@ccb"(below) : "r"(floor));
  return below;
#else
  return stack_pointer() < floor;
#endif
}

// True on a thread started by with_stack_room(): the recursion it continues must stay on it (a
// hand-off to a worker could wait for the very worker that is blocked until this thread ends).
inline bool on_overflow_stack() noexcept {
  return this_fork_join_thread.on_overflow_stack;
}

// stack_nearly_full()'s answer below the floor it read, which may be a thread's first check.
[[gnu::cold, gnu::noinline]] inline bool stack_nearly_full_once_measured() noexcept {
  return stack_pointer() < this_thread_stack_floors().overflow_floor;
}

}  // namespace detail

// True when more than three quarters of this thread's stack are in use.
inline bool stack_nearly_full() noexcept {
  // One TLS load and one compare on every fork: a thread whose floors are not measured yet has
  // the highest address for a floor (StackFloors), so its first check comes here.
  if (detail::stack_below(detail::this_fork_join_thread.stack_floors.overflow_floor)) [[unlikely]]
    return detail::stack_nearly_full_once_measured();
  return false;
}

namespace detail {

// The thread start itself is no template: one std::thread for the whole program, not one per
// caller's callable (each instantiation of std::thread's machinery costs compile time in every
// file that forks). body(context) runs on the fresh thread while this one waits for it.
[[gnu::cold, gnu::noinline]] inline void run_on_fresh_stack(void (*body)(void*), void* context) {
  // The fresh thread waits as this one would: wait_idle() there is refused where it is refused
  // here (a hang otherwise: the pool goes idle only once this blocked thread's task ends).
  const BlockedThreadRole role;
  IThreadPool* const pool = current_pool();  // what TaskGroup() and join(a, b) find there
  std::thread overflow([&] {
    role.adopt();
    this_fork_join_thread.on_overflow_stack = true;
    if (pool == nullptr) {
      body(context);
      return;
    }
    RunningTaskScope running(*pool);
    body(context);
  });
  overflow.join();
}

template <class F>
[[gnu::cold, gnu::noinline]] auto on_fresh_stack(F& f) -> decltype(f()) {
  using R = decltype(f());
  struct Frame {
    F* f;
    std::exception_ptr error;
    std::optional<std::conditional_t<std::is_void_v<R>, bool, R>> result;
  } frame{&f, nullptr, std::nullopt};
  run_on_fresh_stack(
      [](void* context) {
        Frame& fr = *static_cast<Frame*>(context);
        try {
          if constexpr (std::is_void_v<R>) {
            (*fr.f)();
            fr.result.emplace(true);
          } else {
            fr.result.emplace((*fr.f)());
          }
        } catch (...) {
          fr.error = std::current_exception();
        }
      },
      &frame);
  if (frame.error) std::rethrow_exception(frame.error);
  if constexpr (!std::is_void_v<R>) return std::move(*frame.result);
}

}  // namespace detail

// The program's own recursion (a join inside a join inside a join...) is not helping and cannot
// be refused, but it can be moved: when the stack is nearly full, f runs on a fresh thread with a
// fresh stack of the default size while this thread blocks in join(). That thread is not a worker,
// so what it forks is an external submission; it claims its own forked work inline, so a pool
// whose only worker is the blocked one still makes progress. The cost, one thread start per
// few tens of thousands of nested levels, is negligible next to the recursion itself.
template <class F>
auto with_stack_room(F&& f) -> decltype(f()) {
  if (!stack_nearly_full()) return f();
  return detail::on_fresh_stack(f);
}

}  // namespace wslab
