// Coroutine frames recycled per thread: a CoTask's frame is freed into the freeing thread's cache
// and the next frame of a similar size on that thread comes from it, so a fork-join recursion of
// coroutines reaches a steady state that calls malloc for nothing.
//
// Size classes of 64 bytes up to 1 KiB; each class keeps at most kKeep frames, so a thread that
// frees more frames than it allocates (a thief that finishes children forked elsewhere) returns
// the surplus to the heap instead of hoarding it. Larger frames go to the heap directly.
//
// Under AddressSanitizer a cached frame is poisoned until it is handed out again, so a coroutine
// frame touched after it was destroyed is still reported, as it would be without the cache.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>

#include <pthread.h>

#include "../../common/config.hpp"
#if WSLAB_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace wslab::detail {

// One per thread, in the thread's fork-join record (fork_join/thread_record.hpp). Trivially
// destructible, so that using it costs a TLS-relative access and no init check (a thread_local with
// a destructor is reached through a call that registers the destructor on first use). The thread's
// cached frames go back to the heap when the thread ends through a POSIX thread-specific key
// instead, set to the cache when it first keeps a frame: its destructor (on glibc, after the
// thread's thread_local objects have been destroyed) closes the cache and marks it closed, so a
// frame freed later still goes to the heap.
class FrameCache {
 public:
  static constexpr std::size_t kGranule = 64;
  static constexpr std::size_t kClasses = 16;  // frames up to 16 x 64 = 1,024 bytes
  static constexpr std::uint32_t kKeep = 256;  // per class and thread

  constexpr FrameCache() noexcept = default;
  FrameCache(const FrameCache&) = delete;
  FrameCache& operator=(const FrameCache&) = delete;

  void* allocate(std::size_t bytes) {
    const std::size_t c = class_of(bytes);
    if (c < kClasses) {
      if (Node* n = heads_[c]) {
        unpoison(n, (c + 1) * kGranule);
        heads_[c] = n->next;
        --counts_[c];
        return n;
      }
      return ::operator new((c + 1) * kGranule);
    }
    return ::operator new(bytes);
  }

  void deallocate(void* p, std::size_t bytes) noexcept {
    const std::size_t c = class_of(bytes);
    if (c < kClasses && counts_[c] < kKeep && state_ == State::open) [[likely]] {
      keep(p, c);
      return;
    }
    deallocate_rarely(p, c);
  }

  // Frees every cached frame and sends later frees to the heap.
  void close() noexcept {
    if (state_ == State::open) unregister();
    state_ = State::closed;
    for (std::size_t c = 0; c < kClasses; ++c) {
      while (Node* n = heads_[c]) {
        unpoison(n, (c + 1) * kGranule);
        heads_[c] = n->next;
        ::operator delete(n);
      }
      counts_[c] = 0;
    }
  }

 private:
  struct Node {
    Node* next;
  };
  enum class State : std::uint8_t { fresh, open, closed };

  static std::size_t class_of(std::size_t bytes) noexcept { return (bytes - 1) / kGranule; }
#if WSLAB_ASAN
  static void poison(void* p, std::size_t n) noexcept { ASAN_POISON_MEMORY_REGION(p, n); }
  static void unpoison(void* p, std::size_t n) noexcept { ASAN_UNPOISON_MEMORY_REGION(p, n); }
#else
  static void poison(void*, std::size_t) noexcept {}
  static void unpoison(void*, std::size_t) noexcept {}
#endif

  void keep(void* p, std::size_t c) noexcept {
    Node* n = static_cast<Node*>(p);
    n->next = heads_[c];
    heads_[c] = n;
    ++counts_[c];
    poison(n, (c + 1) * kGranule);
  }
  // The thread's first frame to keep (the cache opens: its thread-specific key is set), or a
  // frame the cache does not keep (too large, the class full, or the thread ended).
  [[gnu::cold]] void deallocate_rarely(void* p, std::size_t c) noexcept;
  // Clears the thread's key if it names this cache.
  void unregister() noexcept;

  std::array<Node*, kClasses> heads_{};
  std::array<std::uint32_t, kClasses> counts_{};
  State state_ = State::fresh;
};

// The key whose destructor closes the cache it names when its thread ends, made once per process.
// nullopt if the system has no key left: caches then never open, and frames go to the heap. A
// thread that ends by returning from main() or calling exit() runs no key destructor; the static
// object below closes its cache as the process's static objects are destroyed.
inline const std::optional<pthread_key_t>& frame_cache_closer() noexcept {
  static const std::optional<pthread_key_t> key = []() -> std::optional<pthread_key_t> {
    pthread_key_t k;
    if (pthread_key_create(&k, [](void* cache) { static_cast<FrameCache*>(cache)->close(); }) != 0)
      return {};
    return k;
  }();
  struct CloseAtExit {
    ~CloseAtExit() {
      if (!key) return;
      if (void* cache = pthread_getspecific(*key)) static_cast<FrameCache*>(cache)->close();
    }
  };
  static const CloseAtExit close_at_exit;
  return key;
}

inline void FrameCache::deallocate_rarely(void* p, std::size_t c) noexcept {
  if (state_ == State::fresh && c < kClasses) {
    // The key names one cache per thread: the thread's own, normally. A second cache on the same
    // thread (a test's) opens without it and must be closed by hand.
    const std::optional<pthread_key_t>& closer = frame_cache_closer();
    if (closer &&
        (pthread_getspecific(*closer) != nullptr || pthread_setspecific(*closer, this) == 0)) {
      state_ = State::open;
      keep(p, c);
      return;
    }
  }
  ::operator delete(p);
}

inline void FrameCache::unregister() noexcept {
  const std::optional<pthread_key_t>& closer = frame_cache_closer();
  if (closer && pthread_getspecific(*closer) == this) (void)pthread_setspecific(*closer, nullptr);
}

}  // namespace wslab::detail
