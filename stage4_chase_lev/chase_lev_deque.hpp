// ChaseLevDeque<T>: the dynamic circular work-stealing deque.
//
//   D. Chase and Y. Lev, "Dynamic Circular Work-Stealing Deque", SPAA 2005 (the algorithm);
//   N. M. Le, A. Pop, A. Cohen and F. Zappa Nardelli, "Correct and Efficient Work-Stealing for
//   Weak Memory Models", PPoPP 2013 (the C11 orderings used below, proved correct there).
//
// One owner thread pushes and pops at the bottom; any number of thieves take from the top. The
// owner pays no read-modify-write except when it races a thief for the very last item.
//
// Invariants (indices are 64-bit and never wrap in practice: 2^63 pushes):
//   I1  top <= bottom + 1 at all times, and top only grows (every change is a CAS top -> top+1).
//   I2  The items are the slots [top, bottom) of the current buffer, index i in slot i & mask.
//   I3  Only the owner writes bottom and the buffer pointer, and only the owner writes slots.
//   I4  A buffer that was ever published stays allocated until the deque is destroyed; each
//       grown-out buffer keeps, unchanged, the items it held when the owner copied them.
// Lemma (exactly once): an item at index i leaves the deque only through a successful CAS of top
// from i to i+1 (a thief, or the owner taking the last item), or through the owner's pop when it
// saw top < i after publishing bottom = i. The seq_cst fence in pop() and the one in steal()
// make these two cases exclusive: see the comments at the fences.
#pragma once

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "common/config.hpp"

namespace wslab {

// What the deque stores: copied bit for bit into atomic slots, so trivially copyable, and
// lock-free as an atomic (a pointer is the intended case).
template <class T>
concept DequeElement = std::is_trivially_copyable_v<T> && std::atomic<T>::is_always_lock_free;

// Where the deque puts its two fences, as a policy type: push()'s release fence (kPushRelease)
// and pop()'s seq_cst fence (pop_needs_fence(), asked on every pop). LeFences is Le et al.'s
// algorithm. The two others are deliberately broken, for the course lab: each drops one fence,
// and the tests show what catches it (README.md, "Breaking it on purpose"). A policy may carry
// state (the deque stores one, passed to its constructor), so that a scheduler can decide per
// pop whether the fence is needed; it must then prove that skipping it is safe.
template <class F>
concept DequeFences = std::is_nothrow_copy_constructible_v<F> && requires(const F& f) {
  { F::kPushRelease } -> std::convertible_to<bool>;
  { f.pop_needs_fence() } noexcept -> std::same_as<bool>;
};

struct LeFences {
  static constexpr bool kPushRelease = true;
  static constexpr bool pop_needs_fence() noexcept { return true; }
};
// push() publishes bottom without the release fence: a thief may read the item's slot (and the
// task it points to) before the owner's writes are visible. ThreadSanitizer reports it.
struct NoPushRelease {
  static constexpr bool kPushRelease = false;
  static constexpr bool pop_needs_fence() noexcept { return true; }
};
// pop() drops the seq_cst fence between its store to bottom and its load of top: the owner and a
// thief can both take the same item. Only hardware store buffering shows it; see the README.
struct NoPopFence {
  static constexpr bool kPushRelease = true;
  static constexpr bool pop_needs_fence() noexcept { return false; }
};

enum class StealOutcome { success, empty, lost_race };

template <class T>
struct StealResult {
  StealOutcome outcome;
  T item{};  // meaningful only when outcome == success
};

template <DequeElement T, DequeFences Fences = LeFences, bool Padded = true>
class ChaseLevDeque {
  static constexpr std::size_t kAlign = Padded ? kCacheLineSize : alignof(std::int64_t);

 public:
  // `initial_capacity` is rounded up to a power of two (at least 2).
  explicit ChaseLevDeque(std::size_t initial_capacity = 256, Fences fences = {}) 
      : fences_(fences) {
    std::size_t capacity = 2;
    while (capacity < initial_capacity)
      capacity *= 2;
    buffers_.emplace_back(Buffer::create(static_cast<std::int64_t>(capacity)));
    buffer_.store(buffers_.back().get(), std::memory_order_relaxed);
  }

  ChaseLevDeque(const ChaseLevDeque&) = delete;
  ChaseLevDeque& operator=(const ChaseLevDeque&) = delete;

  // Owner only. Inlined: a handful of instructions on every spawn, and the call cost more.
  [[gnu::always_inline]] void push(T item) {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed);
    Buffer* buffer = buffer_.load(std::memory_order_relaxed);
    // Room is checked against the owner's last reading of top, not against top itself: top only
    // grows, so an old reading only underestimates the room, and the line thieves CAS on is read
    // only when the buffer looks full, instead of on every push.
    if (b - top_seen_ > buffer->capacity - 1) [[unlikely]] {
      // acquire: pairs with the thieves' CAS on top, so a slot we are about to reuse was read by
      // the thief that took it before we overwrite it.
      top_seen_ = top_.load(std::memory_order_acquire);
      if (b - top_seen_ > buffer->capacity - 1) buffer = grow(buffer, top_seen_, b);
    }
    buffer->put(b, item);
    if constexpr (kTsanOrderings) {
      // TSan does not model fences: the same publication as a release store it understands.
      bottom_.store(b + 1, Fences::kPushRelease ? std::memory_order_release
                                                : std::memory_order_relaxed);
    } else {
      // release: the slot (and whatever the item points to) is visible to a thief that reads the
      // new bottom with acquire, before it can read the slot.
      if constexpr (Fences::kPushRelease) std::atomic_thread_fence(std::memory_order_release);
      bottom_.store(b + 1, std::memory_order_relaxed);
    }
  }

  // Owner only: the most recently pushed item, or nothing.
  std::optional<T> pop() {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    Buffer* buffer = buffer_.load(std::memory_order_relaxed);
    std::int64_t t;
    if (kTsanOrderings && fences_.pop_needs_fence()) {
      // The fence below, spelled as seq_cst accesses so that TSan sees them: both are in the
      // single total order S together with the thieves' seq_cst loads of top and bottom.
      bottom_.store(b, std::memory_order_seq_cst);
      t = top_.load(std::memory_order_seq_cst);
    } else {
      bottom_.store(b, std::memory_order_relaxed);
      // seq_cst fence: the store-load order x86 store buffers would otherwise break. Either a
      // thief's fence comes first in S, and we read the top it is about to CAS (so we CAS too
      // when one item is left), or ours does, and the thief reads our smaller bottom and backs
      // off. Without it the owner and a thief can each take the same single-item-left index.
      if (fences_.pop_needs_fence()) std::atomic_thread_fence(std::memory_order_seq_cst);
      t = top_.load(std::memory_order_relaxed);
    }
    return finish_pop(buffer, b, t);
  }

  // Any thread: the oldest item, `empty`, or `lost_race` (another thief or the owner took the
  // item we were after; the caller may retry at once).
  StealResult<T> steal() {
    std::int64_t t;
    std::int64_t b;
    if constexpr (kTsanOrderings) {
      t = top_.load(std::memory_order_seq_cst);
      b = bottom_.load(std::memory_order_seq_cst);
    } else {
      // acquire: pairs with the CAS of an earlier thief, so we read a top no older than its.
      t = top_.load(std::memory_order_acquire);
      // seq_cst fence: the thief's half of the pair described in pop(); it orders our load of
      // top before our load of bottom in S against the owner's store of bottom.
      std::atomic_thread_fence(std::memory_order_seq_cst);
      // acquire: pairs with push()'s release fence, making the slot's contents visible.
      b = bottom_.load(std::memory_order_acquire);
    }
    if (t >= b) return {StealOutcome::empty};
    // acquire (Le et al. use consume): the buffer's copied contents are visible; and the buffer
    // is at least as new as the one item t was written to, since we read bottom first.
    Buffer* buffer = buffer_.load(std::memory_order_acquire);
    T item = buffer->get(t);
    // seq_cst: the CAS that decides between us, other thieves and the owner's last-item CAS.
    // Reading the slot before winning is fine: the old buffer stays allocated (I4) and a lost
    // race throws the value away.
    if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                      std::memory_order_relaxed)) {
      return {StealOutcome::lost_race};
    }
    return {StealOutcome::success, item};
  }

  // Approximate, for heuristics and tests; exact when no other thread touches the deque.
  std::int64_t size() const noexcept {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed);
    const std::int64_t t = top_.load(std::memory_order_relaxed);
    return b > t ? b - t : 0;
  }
  bool empty() const noexcept { return size() == 0; }
  // For a re-scan that must see every push ordered before it (the pool's parking protocol).
  bool empty_seq_cst() const noexcept {
    const std::int64_t t = top_.load(std::memory_order_seq_cst);
    return bottom_.load(std::memory_order_seq_cst) <= t;
  }
  // Owner only.
  std::size_t capacity() const noexcept {
    return static_cast<std::size_t>(buffer_.load(std::memory_order_relaxed)->capacity);
  }
  // Owner only: how many buffers were grown out and are kept until destruction.
  std::size_t retired_buffers() const noexcept { return buffers_.size() - 1; }

  static constexpr bool kTsanOrderings = WSLAB_TSAN != 0;

 private:
  // A ring of 2^k relaxed atomic slots, allocated in one block with its header so that reaching
  // a slot is one dependent load fewer on every push, pop and steal.
  struct Buffer {
    const std::int64_t capacity;
    const std::int64_t mask;

    static Buffer* create(std::int64_t cap) {
      static_assert(alignof(std::atomic<T>) <= alignof(Buffer) &&
                    sizeof(Buffer) % alignof(std::atomic<T>) == 0);
      void* memory =
          ::operator new(sizeof(Buffer) + static_cast<std::size_t>(cap) * sizeof(std::atomic<T>));
      Buffer* buffer = ::new (memory) Buffer{cap, cap - 1};
      for (std::int64_t i = 0; i < cap; ++i)
        ::new (static_cast<void*>(buffer->slot(i))) std::atomic<T>();
      return buffer;
    }
    struct Deleter {
      void operator()(Buffer* buffer) const noexcept {
        // std::atomic<T> of a trivially copyable T is trivially destructible: nothing to run.
        buffer->~Buffer();
        ::operator delete(static_cast<void*>(buffer));
      }
    };

    // Slots are relaxed atomics: a thief may read a slot the owner is rewriting (it then loses
    // the CAS and drops the value), which would be a data race on a plain T.
    T get(std::int64_t i) noexcept { return slot(i & mask)->load(std::memory_order_relaxed); }
    void put(std::int64_t i, T v) noexcept { slot(i & mask)->store(v, std::memory_order_relaxed); }

   private:
    std::atomic<T>* slot(std::int64_t index) noexcept {
      return reinterpret_cast<std::atomic<T>*>(reinterpret_cast<unsigned char*>(this + 1)) + index;
    }
  };
  using BufferPtr = std::unique_ptr<Buffer, typename Buffer::Deleter>;

  // The end of pop(), once bottom = b is published and top = t read after the (or no) fence.
  std::optional<T> finish_pop(Buffer* buffer, std::int64_t b, std::int64_t t) {
    if (t > b) {  // it was empty: undo the reservation
      bottom_.store(b + 1, std::memory_order_relaxed);
      return std::nullopt;
    }
    T item = buffer->get(b);
    if (t == b) {
      // The last item: a thief may want it too, so we take it the way thieves do, with a CAS on
      // top. seq_cst: it joins the total order of the fences above (Le et al., Fig. 1).
      const bool won = top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                                    std::memory_order_relaxed);
      bottom_.store(b + 1, std::memory_order_relaxed);
      if (!won) return std::nullopt;
    }
    return item;
  }

  // Owner only. Copies [t, b) into a buffer twice as large and publishes it. The old buffer is
  // retired, not freed: a thief that loaded the old pointer may be preempted for any length of
  // time before it reads its slot, and the deque has no way to know when no thief holds it (that
  // would take hazard pointers or epochs on every steal). Keeping it costs at most the size of
  // the current buffer in total (the retired sizes sum to less than it: 2 + 4 + ... + n/2 < n),
  // and it is freed when the deque is destroyed, when no thief can exist any more.
  [[gnu::noinline, gnu::cold]] Buffer* grow(Buffer* old, std::int64_t t, std::int64_t b) {
    buffers_.emplace_back(Buffer::create(old->capacity * 2));
    Buffer* bigger = buffers_.back().get();
    for (std::int64_t i = t; i < b; ++i)
      bigger->put(i, old->get(i));
    // release: a thief that acquires this pointer sees the copied slots.
    buffer_.store(bigger, std::memory_order_release);
    return bigger;
  }

  [[no_unique_address]] Fences fences_;
  // top and bottom on separate lines: thieves hammer top, the owner writes bottom on every push.
  alignas(kAlign) std::atomic<std::int64_t> top_{0};
  alignas(kAlign) std::atomic<std::int64_t> bottom_{0};
  std::atomic<Buffer*> buffer_{nullptr};
  std::int64_t top_seen_ = 0;       // owner only: top as last read by push() (never above top)
  std::vector<BufferPtr> buffers_;  // owner only; back() is the current buffer
};

}  // namespace wslab
