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

#include "../../common/config.hpp"
#if WSLAB_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace wslab::detail {

// One per thread (this_thread_frames below). Its destructor returns the cached frames to the heap
// when the thread ends, and marks the cache closed: a frame freed later in the thread's exit (by
// another thread_local object that owns a CoTask) goes to the heap directly.
class FrameCache {
 public:
  static constexpr std::size_t kGranule = 64;
  static constexpr std::size_t kClasses = 16;  // frames up to 16 x 64 = 1,024 bytes
  static constexpr std::uint32_t kKeep = 256;  // per class and thread

  constexpr FrameCache() noexcept = default;
  FrameCache(const FrameCache&) = delete;
  FrameCache& operator=(const FrameCache&) = delete;
  ~FrameCache() { close(); }

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
    if (c < kClasses && counts_[c] < kKeep && !closed_) {
      Node* n = static_cast<Node*>(p);
      n->next = heads_[c];
      heads_[c] = n;
      ++counts_[c];
      poison(n, (c + 1) * kGranule);
      return;
    }
    ::operator delete(p);
  }

  // Frees every cached frame and sends later frees to the heap.
  void close() noexcept {
    closed_ = true;
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

  static std::size_t class_of(std::size_t bytes) noexcept { return (bytes - 1) / kGranule; }
#if WSLAB_ASAN
  static void poison(void* p, std::size_t n) noexcept { ASAN_POISON_MEMORY_REGION(p, n); }
  static void unpoison(void* p, std::size_t n) noexcept { ASAN_UNPOISON_MEMORY_REGION(p, n); }
#else
  static void poison(void*, std::size_t) noexcept {}
  static void unpoison(void*, std::size_t) noexcept {}
#endif

  std::array<Node*, kClasses> heads_{};
  std::array<std::uint32_t, kClasses> counts_{};
  bool closed_ = false;
};

// The calling thread's cache: constant-initialised, so a thread that never runs a coroutine
// pays nothing, and its destructor is registered on the thread's first use.
inline thread_local constinit FrameCache this_thread_frames;

}  // namespace wslab::detail
