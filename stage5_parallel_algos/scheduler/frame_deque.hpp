// FrameDeque: the Chase-Lev deque (stage4_chase_lev/chase_lev_deque.hpp) with a frame of eight
// words in each slot instead of a pointer, so that a small job is written into the deque itself,
// as Lace writes its tasks (van Dijk and van de Pol, "Lace: non-blocking split deque for
// work-stealing", 2014), with no node to take from a cache, fill, point at and give back.
//
// Same indices, same fences, same proof as the pointer deque; what changes is how a frame leaves:
//   * A thief copies the whole frame before its CAS on top, as the pointer deque reads its item
//     before the CAS. The copy may be torn (the owner rewriting the slot after wrapping around),
//     but then the CAS fails: the owner rewrites slot i only after it read top > i, and only the
//     CAS that takes i moves top past i. If the thief's CAS succeeds, that CAS is the one, so its
//     reads (before its release RMW) happen before the owner's rewrite. Copying after the CAS
//     instead lets the owner rewrite the slot between the two (FrameCopy::after_claim, a broken
//     variant for the tests).
//   * The owner reads a popped frame in place (pop() returns the slot): nobody else writes it, and
//     the owner rewrites it only with its next push. So whatever runs a popped frame must copy out
//     what it needs before anything it calls may push (a job's run function copies its callable
//     first).
// The words are relaxed atomics: a thief may read a slot the owner is rewriting (it then loses
// its CAS), and that must not be a data race. On x86 and AArch64 a relaxed 64-bit load or store
// is a plain one.
//
// Buffers given back (README.md, step 'Frames given back'). A grown deque keeps the buffers it
// outgrew, since a thief may still be copying from one, and a large buffer stays after its burst.
// give_back() lets the owner of an empty deque return to a small buffer and free the others once
// no thief can be reading them: a thief counts itself in `readers_` before it loads the buffer's
// address and out after its copy and CAS. The owner's store of a new buffer and its load of
// `readers_` are seq_cst, as are a thief's increment and its load of the buffer: if the owner reads
// 0, each thief either finished its copy before (its release decrement is what the owner read, so
// the copy happens before the free) or counts itself in after the owner's load, and so after the
// owner's store in the single order of seq_cst operations, and loads the new buffer. A thief counts
// itself only once it has seen frames (t < b), so that an empty deque's scans cost nothing more.
// FrameFree::unchecked, a broken variant for the tests, frees without looking at `readers_`.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "../../common/config.hpp"
#include "../../stage4_chase_lev/chase_lev_deque.hpp"

namespace wslab::sched {

// How a thief copies the frame it steals. `after_claim` is a deliberately broken variant for the
// tests: the copy after the CAS may read a frame the owner wrote over it.
enum class FrameCopy { before_claim, after_claim };

// Called by a thief between its successful CAS and its return (a test's window); nothing by
// default.
struct NoClaimHook {
  void operator()() const noexcept {}
};

// How give_back() frees the buffers a deque has left. `unchecked` is a deliberately broken
// variant for the tests: it frees them while a thief may still be copying from one.
enum class FrameFree { after_readers, unchecked };

// Called by a thief between its load of the buffer's address and its copy of the frame (a test's
// window); nothing by default.
struct NoReadHook {
  void operator()() const noexcept {}
};

// One slot of a frame deque, and a thief's copy of one: a cache line of relaxed atomic words.
inline constexpr std::size_t kFrameWords = 8;
struct alignas(kCacheLineSize) FrameSlot {
  std::atomic<std::uint64_t> words[kFrameWords];
  std::uint64_t operator[](std::size_t i) const noexcept {
    return words[i].load(std::memory_order_relaxed);
  }
};

// Copies a frame word by word (relaxed): a thief's copy, or a copy of the owner's own slot.
inline void copy_frame(const FrameSlot& from, FrameSlot& to) noexcept {
  for (std::size_t i = 0; i < kFrameWords; ++i)
    to.words[i].store(from[i], std::memory_order_relaxed);
}

template <DequeFences Fences = LeFences, FrameCopy Copy = FrameCopy::before_claim,
          class ClaimHook = NoClaimHook, FrameFree Free = FrameFree::after_readers,
          class ReadHook = NoReadHook>
class BasicFrameDeque {
 public:
  static constexpr std::size_t kWords = kFrameWords;
  using Slot = FrameSlot;

  static constexpr bool kTsanOrderings = WSLAB_TSAN != 0;

  // `initial_capacity` is rounded up to a power of two (at least 2).
  explicit BasicFrameDeque(std::size_t initial_capacity = 256, Fences fences = {},
                           ClaimHook hook = {}, ReadHook read_hook = {})
      : fences_(fences), hook_(hook), read_hook_(read_hook) {
    buffers_.emplace_back(Buffer::create(rounded_capacity(initial_capacity)));
    buffer_.store(buffers_.back().get(), std::memory_order_relaxed);
    own_buffer(buffers_.back().get());
    held_slots_.store(capacity(), std::memory_order_relaxed);
  }
  BasicFrameDeque(const BasicFrameDeque&) = delete;
  BasicFrameDeque& operator=(const BasicFrameDeque&) = delete;

  // Owner only: writes the first N words of a frame into the next slot and publishes it (the other
  // words keep whatever the slot held). May throw std::bad_alloc when the buffer must grow
  // (nothing is pushed then).
  template <std::size_t N>
    requires(N >= 1 && N <= kWords)
  [[gnu::always_inline]] void push(const std::array<std::uint64_t, N>& words) {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed);
    Buffer* buffer = buffer_.load(std::memory_order_relaxed);
    // As the pointer deque: a stale top underestimates the room, and the thieves' line is read
    // only when the buffer looks full. acquire: a slot we rewrite was copied before we write it.
    if (b - top_seen_ > buffer->capacity - 1) [[unlikely]] {
      top_seen_ = top_.load(std::memory_order_acquire);
      if (b - top_seen_ > buffer->capacity - 1) buffer = grow(buffer, top_seen_, b);
    }
    write_and_publish(own_at(b), b, words);
  }

  // Owner only: push() at `b`, the bottom now, by an owner that knows the slot there is free: it
  // read top at least b - capacity() + 1 since its last growth (the scheduler's
  // frame_grow_check_at). No look at top, no growth, no throw.
  template <std::size_t N>
    requires(N >= 1 && N <= kWords)
  [[gnu::always_inline]] void push_with_room(std::int64_t b,
                                             const std::array<std::uint64_t, N>& words) noexcept {
    WSLAB_ASSERT(b == bottom_.load(std::memory_order_relaxed));
    WSLAB_ASSERT(b - top_.load(std::memory_order_relaxed) < static_cast<std::int64_t>(capacity()));
    write_and_publish(own_at(b), b, words);
  }

  // Owner only: push() of a whole frame copied from a slot (a thief's batch, moved onto its own
  // deque).
  void push(const Slot& frame) {
    std::array<std::uint64_t, kWords> words;
    for (std::size_t i = 0; i < kWords; ++i)
      words[i] = frame[i];
    push(words);
  }

  // Owner only: the slot of the most recently pushed frame, taken, or nullptr. The owner may read
  // it until its next push.
  [[gnu::always_inline]] const Slot* pop() {
    return pop_at(bottom_.load(std::memory_order_relaxed));
  }
  // Owner only: pop() by an owner that has just read the bottom (bottom_index()): a relaxed atomic
  // load is not merged with the one before it, so the caller hands its value in.
  [[gnu::always_inline]] const Slot* pop_at(std::int64_t bottom) {
    WSLAB_ASSERT(bottom == bottom_.load(std::memory_order_relaxed));
    constexpr std::memory_order kRestore = kTsanOrderings && Fences::kPushRelease
                                               ? std::memory_order_release
                                               : std::memory_order_relaxed;
    const std::int64_t b = bottom - 1;
    std::int64_t t;
    if constexpr (kTsanOrderings) {
      const bool fence = fences_.pop_needs_fence();
      bottom_.store(b, fence ? std::memory_order_seq_cst : std::memory_order_relaxed);
      t = top_.load(fence ? std::memory_order_seq_cst : std::memory_order_relaxed);
    } else {
      bottom_.store(b, std::memory_order_relaxed);
      // seq_cst fence: the pointer deque's pop() says why (the store of bottom before the load of
      // top, or the owner and a thief both take the last frame).
      if (fences_.pop_needs_fence()) std::atomic_thread_fence(std::memory_order_seq_cst);
      t = top_.load(std::memory_order_relaxed);
    }
    if (t > b) [[unlikely]] {  // it was empty: undo the reservation
      bottom_.store(b + 1, kRestore);
      return nullptr;
    }
    if (t == b) {
      // The last frame: take it the way thieves do. seq_cst: the CAS joins the order S.
      const bool won = top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                                    std::memory_order_relaxed);
      bottom_.store(b + 1, kRestore);
      if (!won) return nullptr;
    }
    return &own_at(b);
  }

  // Any thread: the oldest frame copied into `out`, `empty`, or `lost_race` (`out` then holds
  // words of no use).
  StealOutcome steal(Slot& out) {
    std::int64_t t;
    std::int64_t b;
    if constexpr (kTsanOrderings) {
      t = top_.load(std::memory_order_seq_cst);
      b = bottom_.load(std::memory_order_seq_cst);
    } else {
      t = top_.load(std::memory_order_acquire);
      std::atomic_thread_fence(std::memory_order_seq_cst);  // the thief's half (see pop())
      b = bottom_.load(std::memory_order_acquire);          // pairs with push()'s release fence
    }
    if (t >= b) return StealOutcome::empty;
    // Counted in before the buffer's address is loaded, out after the last read of the buffer
    // (release: those reads happen before an owner's free that reads the decrement). seq_cst: see
    // the header comment ('Buffers given back').
    readers_.fetch_add(1, std::memory_order_seq_cst);
    // Its acquire half: a grown buffer's copies.
    Buffer* buffer = buffer_.load(std::memory_order_seq_cst);
    read_hook_();
    const Slot& slot = buffer->at(t);
    if constexpr (Copy == FrameCopy::before_claim) copy_frame(slot, out);
    // seq_cst: decides between us, other thieves and the owner's last-frame CAS. Its release half
    // keeps the copy above before it.
    const bool won = top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                                  std::memory_order_relaxed);
    if (won) {
      hook_();
      if constexpr (Copy == FrameCopy::after_claim) copy_frame(slot, out);  // broken: FrameCopy
    }
    readers_.fetch_sub(1, std::memory_order_release);
    return won ? StealOutcome::success : StealOutcome::lost_race;
  }

  // Owner only (README.md, step 'Frames given back'): an empty deque moves to a buffer of
  // `capacity` slots (rounded up as the constructor rounds) when its own is larger; a deque with
  // frames keeps its buffer (nothing is copied). Then every buffer but the current one is freed,
  // unless a thief may be reading one. True when only the current buffer is left; false when a
  // thief may still be copying from another (a later call frees it). Never throws: where the
  // small buffer cannot be allocated, the deque keeps its large one.
  bool give_back(std::size_t capacity) noexcept {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed);
    const std::int64_t cap = rounded_capacity(capacity);
    Buffer* buffer = buffer_.load(std::memory_order_relaxed);
    if (top_.load(std::memory_order_relaxed) >= b && buffer->capacity > cap) {
      try {
        buffers_.reserve(buffers_.size() + 1);
        buffers_.emplace_back(Buffer::create(cap));
        // seq_cst: ordered before the load of readers_ below (the header comment).
        buffer_.store(buffers_.back().get(), std::memory_order_seq_cst);
        own_buffer(buffers_.back().get());
      } catch (const std::bad_alloc&) {
        // Kept: the large buffer still serves.
      }
    }
    if (buffers_.size() == 1) return true;
    if (Free == FrameFree::after_readers && readers_.load(std::memory_order_seq_cst) != 0)
      return false;
    buffers_.erase(buffers_.begin(), buffers_.end() - 1);
    held_slots_.store(capacity_of_held(), std::memory_order_relaxed);
    return true;
  }

  // Approximate, for heuristics and tests; exact when no other thread touches the deque.
  std::int64_t size() const noexcept {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed);
    const std::int64_t t = top_.load(std::memory_order_relaxed);
    return b > t ? b - t : 0;
  }
  bool empty() const noexcept { return size() == 0; }
  // Owner only: the index the next push() writes (indices never move with the buffer).
  std::int64_t bottom_index() const noexcept { return bottom_.load(std::memory_order_relaxed); }
  // Owner only: word `word` of the frame at `index` (below the bottom, at or above top).
  std::uint64_t owner_word(std::int64_t index, std::size_t word) const noexcept {
    return own_at(index)[word];
  }
  // Owner only.
  std::size_t capacity() const noexcept {
    return static_cast<std::size_t>(buffer_.load(std::memory_order_relaxed)->capacity);
  }
  // Owner only: buffers grown out and kept until give_back() or destruction.
  std::size_t retired_buffers() const noexcept { return buffers_.size() - 1; }
  // Any thread, relaxed (for tests and statistics): how many times the deque has grown, and the
  // slots of every buffer it holds, the current one and those kept.
  std::size_t growths() const noexcept { return growths_.load(std::memory_order_relaxed); }
  std::size_t held_slots() const noexcept { return held_slots_.load(std::memory_order_relaxed); }

 private:
  template <std::size_t N>
  [[gnu::always_inline]] void write_and_publish(
      Slot& slot, std::int64_t b, const std::array<std::uint64_t, N>& words) noexcept {
    // Unrolled by hand: a loop here makes GCC write the words to the stack first and copy them.
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (slot.words[I].store(words[I], std::memory_order_relaxed), ...);
    }(std::make_index_sequence<N>{});
    if constexpr (kTsanOrderings) {
      bottom_.store(b + 1,
                    Fences::kPushRelease ? std::memory_order_release : std::memory_order_relaxed);
    } else {
      // release: a thief that reads the new bottom (acquire) sees the frame's words.
      if constexpr (Fences::kPushRelease) std::atomic_thread_fence(std::memory_order_release);
      bottom_.store(b + 1, std::memory_order_relaxed);
    }
  }

  // A ring of 2^k slots after its header, in one block.
  struct Buffer {
    const std::int64_t capacity;
    const std::int64_t mask;
    // A buffer of two huge pages or more starts on a huge page and asks the kernel for huge pages
    // (Linux's transparent huge pages, where they are on "madvise"): a deque that grows to 2^20
    // frames faults its 64 MiB in 32 pieces, not 16,384, and after each idle time (step 'Frames
    // given back') it grows again. A hint: without it the buffer works the same.
    static constexpr std::size_t kHugePage = std::size_t{2} << 20;
    static std::size_t bytes_of(std::int64_t cap) noexcept {
      return (static_cast<std::size_t>(cap) + 1) * sizeof(Slot);
    }
    static std::align_val_t alignment_of(std::int64_t cap) noexcept {
      return std::align_val_t{bytes_of(cap) >= 2 * kHugePage ? kHugePage : alignof(Slot)};
    }
    static Buffer* create(std::int64_t cap) {
      static_assert(sizeof(Buffer) <= sizeof(Slot));
      // The header sits in the line before the first slot: the slots stay on lines of their own.
      void* memory = ::operator new(bytes_of(cap), alignment_of(cap));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
      if (bytes_of(cap) >= 2 * kHugePage)
        (void)::madvise(memory, bytes_of(cap) & ~(kHugePage - 1), MADV_HUGEPAGE);
#endif
      Buffer* buffer = ::new (memory) Buffer{cap, cap - 1};
      for (std::int64_t i = 0; i < cap; ++i)
        ::new (static_cast<void*>(buffer->slots() + i)) Slot{};
      return buffer;
    }
    Slot& at(std::int64_t index) noexcept { return slots()[index & mask]; }

   private:
    Slot* slots() noexcept {
      return reinterpret_cast<Slot*>(reinterpret_cast<std::byte*>(this) + sizeof(Slot));
    }
  };
  struct FreeBlock {
    void operator()(Buffer* b) const noexcept {
      ::operator delete(static_cast<void*>(b), Buffer::alignment_of(b->capacity));
    }
  };
  using BufferPtr = std::unique_ptr<Buffer, FreeBlock>;

  // Owner only: copies [t, b) into a buffer twice as large and publishes it; the old one is
  // retired, not freed (a thief may still read it), as in the pointer deque, until a give_back()
  // finds no thief reading.
  [[gnu::noinline, gnu::cold]] Buffer* grow(Buffer* old, std::int64_t t, std::int64_t b) {
    BufferPtr owner(Buffer::create(old->capacity * 2));
    buffers_.push_back(std::move(owner));
    Buffer* bigger = buffers_.back().get();
    for (std::int64_t i = t; i < b; ++i) {
      const Slot& from = old->at(i);
      Slot& to = bigger->at(i);
      for (std::size_t w = 0; w < kWords; ++w)
        to.words[w].store(from[w], std::memory_order_relaxed);
    }
    // release: a thief that acquires this pointer sees the copied frames. seq_cst: ordered before
    // give_back()'s load of readers_ (the header comment).
    buffer_.store(bigger, std::memory_order_seq_cst);
    own_buffer(bigger);
    growths_.store(growths_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    held_slots_.store(capacity_of_held(), std::memory_order_relaxed);
    return bigger;
  }

  static std::int64_t rounded_capacity(std::size_t capacity) noexcept {
    std::int64_t rounded = 2;
    while (static_cast<std::size_t>(rounded) < capacity)
      rounded *= 2;
    return rounded;
  }
  std::size_t capacity_of_held() const noexcept {
    std::size_t slots = 0;
    for (const BufferPtr& held : buffers_)
      slots += static_cast<std::size_t>(held->capacity);
    return slots;
  }

  [[no_unique_address]] Fences fences_;
  [[no_unique_address]] ClaimHook hook_;
  [[no_unique_address]] ReadHook read_hook_;
  alignas(kCacheLineSize) std::atomic<std::int64_t> top_{0};
  // Thieves between their load of the buffer's address and their last read of it; on a line of
  // its own, so that their counting does not take top_'s line from the owner.
  alignas(kCacheLineSize) std::atomic<std::uint32_t> readers_{0};
  alignas(kCacheLineSize) std::atomic<std::int64_t> bottom_{0};
  std::atomic<Buffer*> buffer_{nullptr};
  // Owner only: the current buffer's first slot and mask, copied out of it, so that the owner
  // finds a slot with two loads that do not wait for each other, not a load of the buffer's
  // address and then one of its mask (step 'One look per push').
  Slot& own_at(std::int64_t index) const noexcept { return own_slots_[index & own_mask_]; }
  void own_buffer(Buffer* buffer) noexcept {
    own_slots_ = &buffer->at(0);
    own_mask_ = buffer->mask;
  }
  Slot* own_slots_ = nullptr;
  std::int64_t own_mask_ = 0;
  std::int64_t top_seen_ = 0;               // owner only: top as push() last read it
  std::vector<BufferPtr> buffers_;          // owner only; back() is the current buffer
  std::atomic<std::size_t> growths_{0};     // written by the owner only
  std::atomic<std::size_t> held_slots_{0};  // written by the owner only
};

using FrameDeque = BasicFrameDeque<>;

}  // namespace wslab::sched
