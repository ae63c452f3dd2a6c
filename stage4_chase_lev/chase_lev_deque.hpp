// ChaseLevDeque<T>: the dynamic circular work-stealing deque.
//
//   D. Chase and Y. Lev, "Dynamic Circular Work-Stealing Deque", SPAA 2005 (the algorithm);
//   N. M. Le, A. Pop, A. Cohen and F. Zappa Nardelli, "Correct and Efficient Work-Stealing for
//   Weak Memory Models", PPoPP 2013 (the C11 orderings below, proved correct there).
//
// One owner pushes and pops at the bottom; any number of thieves take from the top. The owner
// pays no read-modify-write except when it races a thief for the very last item.
//
// Invariants (indices are 64-bit and never wrap in practice):
//   I1  top only grows, and only by a CAS from t to t+1; top <= bottom + 1.
//   I2  The items are the indices [top, bottom) of the current buffer, index i in slot i & mask.
//   I3  Only the owner writes bottom, the buffer pointer and the slots.
//   I4  A published buffer stays allocated until the deque dies, and a grown-out buffer keeps the
//       items it held when they were copied.
// Exactly once: an item at index i leaves through a successful CAS of top from i to i+1 (a thief,
// or the owner taking the last item), or through the owner's pop when it read top < i after
// publishing bottom = i. The seq_cst fences in pop() and steal() make the two cases exclusive.
#pragma once

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "../common/config.hpp"
#include "../common/std_atomics.hpp"

namespace wslab {

// Slots are atomics of T, so T must be trivially copyable and lock-free (a pointer, typically).
template <class T>
concept DequeElement = std::is_trivially_copyable_v<T> && std::atomic<T>::is_always_lock_free;

// Where the deque puts its two fences, as a policy: push()'s release fence (kPushRelease) and
// pop()'s seq_cst fence (pop_needs_fence(), asked on every pop). LeFences is Le et al.'s
// algorithm; the two others each drop one fence on purpose, for the course lab (README.md,
// "Breaking it on purpose"). A policy may carry state (to decide per pop), and must then prove
// that skipping the fence is safe.
template <class F>
concept DequeFences = std::is_nothrow_copy_constructible_v<F> && requires(const F& f) {
  { F::kPushRelease } -> std::convertible_to<bool>;
  requires noexcept(f.pop_needs_fence());
  { f.pop_needs_fence() } -> std::same_as<bool>;
};

struct LeFences {
  static constexpr bool kPushRelease = true;
  static constexpr bool pop_needs_fence() noexcept { return true; }
};
// Broken: a thief may read a slot (and what it points to) before the owner's writes are visible.
struct NoPushRelease {
  static constexpr bool kPushRelease = false;
  static constexpr bool pop_needs_fence() noexcept { return true; }
};
// Broken: the owner and a thief can both take the same item (store buffering).
struct NoPopFence {
  static constexpr bool kPushRelease = true;
  static constexpr bool pop_needs_fence() noexcept { return false; }
};

enum class StealOutcome { success, empty, lost_race };

template <class T>
struct StealResult {
  StealOutcome outcome;
  T item{};  // meaningful only on success
};

// `Atomics` supplies the atomic type and the fence (StdAtomics: std::atomic); the model checker
// runs this very code on its own (tests/model_check/model_atomics.hpp, stage4_chase_lev/tests/
// deque_model_test.cpp).
template <DequeElement T, DequeFences Fences = LeFences, bool Padded = true,
          class Atomics = StdAtomics>
class ChaseLevDeque {
  static constexpr std::size_t kAlign = Padded ? kCacheLineSize : alignof(std::int64_t);
  template <class U>
  using Atomic = typename Atomics::template atomic<U>;

 public:
  // ThreadSanitizer does not model standalone fences: under it, the same algorithm is spelled
  // with seq_cst and release accesses, which sit in the total order S where the fences were.
  static constexpr bool kTsanOrderings = WSLAB_TSAN != 0;

  // `initial_capacity` is rounded up to a power of two (at least 2).
  explicit ChaseLevDeque(std::size_t initial_capacity = 256, Fences fences = {}) : fences_(fences) {
    std::int64_t capacity = 2;
    while (static_cast<std::size_t>(capacity) < initial_capacity)
      capacity *= 2;
    buffers_.emplace_back(Buffer::create(capacity));
    buffer_.store(buffers_.back().get(), std::memory_order_relaxed);
  }

  ChaseLevDeque(const ChaseLevDeque&) = delete;
  ChaseLevDeque& operator=(const ChaseLevDeque&) = delete;

  // Owner only. May throw std::bad_alloc when the buffer must grow (nothing is pushed then).
  [[gnu::always_inline]] void push(T item) {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed);
    Buffer* buffer = buffer_.load(std::memory_order_relaxed);
    // Room is checked against the owner's last reading of top: top only grows, so a stale value
    // underestimates the room, and the thieves' line is read only when the buffer looks full.
    if (b - top_seen_ > buffer->capacity - 1) [[unlikely]] {
      // acquire: pairs with the thieves' CAS, so a slot we reuse was read before we overwrite it.
      top_seen_ = top_.load(std::memory_order_acquire);
      if (b - top_seen_ > buffer->capacity - 1) buffer = grow(buffer, top_seen_, b);
    }
    buffer->put(b, item);
    if constexpr (kTsanOrderings) {
      bottom_.store(b + 1,
                    Fences::kPushRelease ? std::memory_order_release : std::memory_order_relaxed);
    } else {
      // release: a thief that reads the new bottom (acquire) sees the slot and what it points to.
      if constexpr (Fences::kPushRelease) Atomics::thread_fence(std::memory_order_release);
      bottom_.store(b + 1, std::memory_order_relaxed);
    }
  }

  // Owner only: the most recently pushed item, or nothing.
  std::optional<T> pop() {
    // Restoring bottom. With fences, push()'s release fence also covers this later store, so a
    // thief that reads it sees every slot pushed before. Under TSan's release stores it must be a
    // release itself: C++20's release sequence no longer runs through a thread's later plain
    // stores, so a thief reading the restored value would not synchronise with push().
    constexpr std::memory_order kRestore = kTsanOrderings && Fences::kPushRelease
                                               ? std::memory_order_release
                                               : std::memory_order_relaxed;
    const std::int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    Buffer* buffer = buffer_.load(std::memory_order_relaxed);
    std::int64_t t;
    if constexpr (kTsanOrderings) {  // TSan models no fence: the one below as seq_cst accesses
      const bool fence = fences_.pop_needs_fence();
      bottom_.store(b, fence ? std::memory_order_seq_cst : std::memory_order_relaxed);
      t = top_.load(fence ? std::memory_order_seq_cst : std::memory_order_relaxed);
    } else {
      bottom_.store(b, std::memory_order_relaxed);
      // seq_cst fence: orders the store of bottom before the load of top, which a store buffer
      // would otherwise reorder. Either a thief's fence precedes ours in S, and we read the top
      // it is about to CAS (one item left: we CAS too), or ours precedes its fence, and it reads
      // our smaller bottom and backs off. Without it, both can take the same item. The policy is
      // asked after the store: one that skips the fence reasons about what it reads after it.
      if (fences_.pop_needs_fence()) Atomics::thread_fence(std::memory_order_seq_cst);
      t = top_.load(std::memory_order_relaxed);
    }
    if (t > b) {  // it was empty: undo the reservation
      bottom_.store(b + 1, kRestore);
      return std::nullopt;
    }
    T item = buffer->get(b);
    if (t == b) {
      // The last item: take it the way thieves do. seq_cst: the CAS joins the order S.
      const bool won = top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                                    std::memory_order_relaxed);
      bottom_.store(b + 1, kRestore);
      if (!won) return std::nullopt;
    }
    return item;
  }

  // Any thread: the oldest item, `empty`, or `lost_race` (someone else took the item we were
  // after; the caller may retry at once).
  StealResult<T> steal() {
    std::int64_t t;
    std::int64_t b;
    if constexpr (kTsanOrderings) {
      t = top_.load(std::memory_order_seq_cst);
      b = bottom_.load(std::memory_order_seq_cst);
    } else {
      // acquire: pairs with an earlier thief's CAS.
      t = top_.load(std::memory_order_acquire);
      // seq_cst fence: the thief's half of the pair described in pop().
      Atomics::thread_fence(std::memory_order_seq_cst);
      // acquire: pairs with push()'s release fence; the slot's contents are visible.
      b = bottom_.load(std::memory_order_acquire);
    }
    if (t >= b) return {StealOutcome::empty};
    // acquire (Le et al.: consume): the copied contents of a grown buffer are visible.
    Buffer* buffer = buffer_.load(std::memory_order_acquire);
    // Read before winning: the buffer stays allocated (I4); a lost race drops the value.
    T item = buffer->get(t);
    // seq_cst: decides between us, other thieves and the owner's last-item CAS.
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
  // Owner only: the index the next push() writes. Indices never move with the buffer, so an owner
  // that notes this before pushing can later tell what it pushed since from what lay below.
  std::int64_t bottom_index() const noexcept { return bottom_.load(std::memory_order_relaxed); }
  // Owner only.
  std::size_t capacity() const noexcept {
    return static_cast<std::size_t>(buffer_.load(std::memory_order_relaxed)->capacity);
  }
  // Owner only: buffers grown out and kept until destruction.
  std::size_t retired_buffers() const noexcept { return buffers_.size() - 1; }

 private:
  // A ring of 2^k relaxed atomic slots, allocated in one block with its header. Slots are atomic
  // because a thief may read a slot the owner is rewriting (it then loses its CAS).
  struct Buffer {
    const std::int64_t capacity;
    const std::int64_t mask;
    static Buffer* create(std::int64_t cap) {
      static_assert(sizeof(Buffer) % alignof(Atomic<T>) == 0);
      void* memory =
          ::operator new(sizeof(Buffer) + static_cast<std::size_t>(cap) * sizeof(Atomic<T>));
      Buffer* buffer = ::new (memory) Buffer{cap, cap - 1};
      for (std::int64_t i = 0; i < cap; ++i)
        ::new (static_cast<void*>(buffer->slot(i))) Atomic<T>();
      return buffer;
    }

    T get(std::int64_t i) noexcept { return slot(i & mask)->load(std::memory_order_relaxed); }
    void put(std::int64_t i, T v) noexcept { slot(i & mask)->store(v, std::memory_order_relaxed); }

   private:
    Atomic<T>* slot(std::int64_t index) noexcept {
      return reinterpret_cast<Atomic<T>*>(this + 1) + index;
    }
  };
  // The atomic slots of a trivially copyable T are trivially destructible: just free the block.
  struct FreeBlock {
    void operator()(Buffer* b) const noexcept { ::operator delete(b); }
  };
  using BufferPtr = std::unique_ptr<Buffer, FreeBlock>;

  // Owner only: copies [t, b) into a buffer twice as large and publishes it. The old buffer is
  // retired, not freed: a thief that loaded its address may read a slot arbitrarily later, and
  // knowing when none does would cost hazard pointers or epochs on every steal. The retired
  // buffers sum to less than the current one (2 + 4 + ... + n/2 < n).
  [[gnu::noinline, gnu::cold]] Buffer* grow(Buffer* old, std::int64_t t, std::int64_t b) {
    BufferPtr owner(Buffer::create(old->capacity * 2));
    buffers_.push_back(std::move(owner));  // if this throws, `owner` frees the new buffer
    Buffer* bigger = buffers_.back().get();
    for (std::int64_t i = t; i < b; ++i)
      bigger->put(i, old->get(i));
    // release: a thief that acquires this pointer sees the copied slots.
    buffer_.store(bigger, std::memory_order_release);
    return bigger;
  }

  [[no_unique_address]] Fences fences_;
  // top and bottom on separate lines: thieves CAS top, the owner writes bottom on every push.
  alignas(kAlign) Atomic<std::int64_t> top_{0};
  alignas(kAlign) Atomic<std::int64_t> bottom_{0};
  Atomic<Buffer*> buffer_{nullptr};
  std::int64_t top_seen_ = 0;       // owner only: top as push() last read it
  std::vector<BufferPtr> buffers_;  // owner only; back() is the current buffer
};

}  // namespace wslab
