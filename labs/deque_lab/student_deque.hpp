// The deque exercise (README.md in this folder): a Chase-Lev work-stealing deque whose push(),
// pop() and steal() are yours to write. The ring buffer, its growth and the bookkeeping are
// given. Each of the three says what it must achieve and outlines its steps; choosing the memory
// orderings (and fences, if you want them) that make the steps achieve it is the exercise. Until
// you write them they throw std::logic_error, so the grading tests fail at once, naming the
// operation.
//
// The deque is a ring of slots indexed by two 64-bit counters (they never wrap in practice):
//   top_     the index of the oldest item. Thieves take from here.
//   bottom_  one past the newest item. The owner pushes and pops here.
// The items are the indices [top_, bottom_); index i lives in slot i & mask (Buffer::get, put).
//
// Invariants, which the given code keeps and yours must keep too:
//   I1  top_ never goes down, and moves only by a successful compare-exchange from t to t + 1.
//   I2  Only the owner writes bottom_, the slots and buffer_.
//   I3  Exactly once: every pushed item comes out once, from one pop() or from one successful
//       steal(), and nothing that was never pushed comes out.
//   I4  A published buffer stays allocated until the deque is destroyed, and once grow() has
//       replaced it, it is never written again (so a thief that still reads it reads old items).
// Owner and thieves meet at the last item: pop() and steal() may both go for it, and only one
// may get it (I3). top_ is the one counter both sides may change, so that is where they decide.
//
// The atomics come from the policy `Atomics`: Atomic<U> is std::atomic<U> in the pool and the
// grading tests, the model checker's atomic in model_check.sh (README.md, "Read the
// counterexample"). Write a fence as Atomics::thread_fence(order), which is
// std::atomic_thread_fence(order) there, so that the checker sees it.
//
// ThreadSanitizer does not model std::atomic_thread_fence: in a TSan build (WSLAB_TSAN is 1,
// common/config.hpp) code that relies on a fence is reported as racy. If you use fences, give
// that build an equivalent without them (`if constexpr (kTsanBuild)`), as README.md explains.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "../../common/config.hpp"
#include "../../common/std_atomics.hpp"
#include "../../stage4_chase_lev/chase_lev_deque.hpp"  // DequeElement, StealOutcome, StealResult

namespace wslab::labs::deque_lab {

template <DequeElement T, class Atomics = StdAtomics>
class StudentDeque {
  template <class U>
  using Atomic = typename Atomics::template atomic<U>;

 public:
  static constexpr bool kTsanBuild = WSLAB_TSAN != 0;

  // `initial_capacity` is rounded up to a power of two (at least 2).
  explicit StudentDeque(std::size_t initial_capacity = 256) {
    std::int64_t capacity = 2;
    while (static_cast<std::size_t>(capacity) < initial_capacity)
      capacity *= 2;
    buffers_.push_back(std::make_unique<Buffer>(capacity));
    buffer_.store(buffers_.back().get(), std::memory_order_relaxed);
  }

  StudentDeque(const StudentDeque&) = delete;
  StudentDeque& operator=(const StudentDeque&) = delete;

  // Owner only. Adds `item` as the newest item.
  //   1. Read bottom_ (b) and top_ (t). If the ring is full (b - t == capacity), grow it:
  //      buffer = grow(buffer, t, b).
  //   2. Write the item into slot b of the buffer.
  //   3. Publish it: bottom_ = b + 1.
  // Must hold: a thief that reads the new bottom_ and then slot b gets `item`, and sees
  // everything the owner wrote before calling push() (the task `item` points to). A slot is
  // written again only after the thief that took its previous item has read it.
  void push(T item) {
    // TODO(deque_lab): write push() and delete these two lines.
    static_cast<void>(item);
    throw std::logic_error("StudentDeque::push: not implemented yet");
  }

  // Owner only. Takes the newest item, or returns nothing when the deque is empty.
  //   1. b = bottom_ - 1. Reserve index b: bottom_ = b.
  //   2. Read top_ (t).
  //        t > b   it was empty: bottom_ = b + 1 again, and return nothing.
  //        t < b   more than one item: index b is the owner's alone. Return it.
  //        t == b  the last item, which a thief may be taking too. Take it the way a thief
  //                does, by a compare-exchange of top_ from t to t + 1, then bottom_ = b + 1
  //                (empty, whoever won). Return the item if the exchange succeeded.
  // Must hold: an item a thief takes is never also returned by pop() (I3), and pop() returns
  // nothing only when the deque was empty or a thief won the last item.
  std::optional<T> pop() {
    // TODO(deque_lab): write pop() and delete this line.
    throw std::logic_error("StudentDeque::pop: not implemented yet");
  }

  // Any thread. Takes the oldest item: {success, item}; {empty} when there is none; {lost_race}
  // when another thread took the item first (the caller may try again at once).
  //   1. Read top_ (t), then bottom_ (b). If t >= b, return empty.
  //   2. Read the current buffer, and the item at index t in it. (Before step 3: once top_ has
  //      moved past t, the owner may write that slot again.)
  //   3. Claim it: compare-exchange top_ from t to t + 1. Failed: return lost_race and drop the
  //      value read. Succeeded: return success with it.
  // Must hold: a successful steal returns the item pushed at index t, with everything the
  // pusher wrote before pushing it visible; no item is both stolen and popped (I3).
  StealResult<T> steal() {
    // TODO(deque_lab): write steal() and delete this line.
    throw std::logic_error("StudentDeque::steal: not implemented yet");
  }

  // Approximate, for heuristics and tests; exact when no other thread touches the deque.
  std::int64_t size() const noexcept {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed);
    const std::int64_t t = top_.load(std::memory_order_relaxed);
    return b > t ? b - t : 0;
  }
  bool empty() const noexcept { return size() == 0; }
  // Owner only.
  std::size_t capacity() const noexcept {
    return static_cast<std::size_t>(buffer_.load(std::memory_order_relaxed)->capacity);
  }
  // Owner only: buffers that grow() replaced, kept until destruction (I4).
  std::size_t retired_buffers() const noexcept { return buffers_.size() - 1; }

 private:
  // A ring of 2^k slots. The slots are atomics because a thief may read a slot while the owner
  // writes it again (that thief then fails its compare-exchange and drops what it read); relaxed,
  // because what orders them is the orderings on top_ and bottom_, which are yours.
  struct Buffer {
    explicit Buffer(std::int64_t cap)
        : capacity(cap), mask(cap - 1), slots(new Atomic<T>[static_cast<std::size_t>(cap)]) {}
    T get(std::int64_t i) const noexcept { return slots[i & mask].load(std::memory_order_relaxed); }
    void put(std::int64_t i, T v) noexcept { slots[i & mask].store(v, std::memory_order_relaxed); }

    const std::int64_t capacity;
    const std::int64_t mask;
    std::unique_ptr<Atomic<T>[]> slots;
  };

  // Owner only: copies the items [t, b) into a buffer twice as large, publishes it and returns
  // it. The old buffer is kept, not freed (I4): a thief that read its address may still read a
  // slot of it, and knowing when none does would cost every steal extra work.
  Buffer* grow(Buffer* old, std::int64_t t, std::int64_t b) {
    buffers_.push_back(std::make_unique<Buffer>(old->capacity * 2));
    Buffer* bigger = buffers_.back().get();
    for (std::int64_t i = t; i < b; ++i)
      bigger->put(i, old->get(i));
    // release: a thief that loads this pointer with acquire sees the copied slots.
    buffer_.store(bigger, std::memory_order_release);
    return bigger;
  }

  // On separate cache lines: thieves write top_, the owner writes bottom_ on every push and pop.
  alignas(kCacheLineSize) Atomic<std::int64_t> top_{0};
  alignas(kCacheLineSize) Atomic<std::int64_t> bottom_{0};
  Atomic<Buffer*> buffer_{nullptr};
  std::vector<std::unique_ptr<Buffer>> buffers_;  // owner only; back() is the current buffer
};

}  // namespace wslab::labs::deque_lab
