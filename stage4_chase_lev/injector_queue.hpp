// InjectorQueue<T>: the lock-free, unbounded, many-producer many-consumer FIFO that carries
// submissions from threads outside the pool to its workers.
//
// The segmented queue of .NET's ConcurrentQueue (README.md, "The injector"): a conceptually
// infinite array, cut into segments of SegmentSlots slots, linked as they fill.
//   * A producer claims slot `tail` by advancing the tail index, a consumer slot `head` by
//     advancing the head index: every slot has exactly one producer and one consumer.
//   * Claiming a slot and writing it are two steps, so each slot has a state word: the producer
//     sets kWritten after writing the item; the consumer that claimed the slot waits for it.
//   * The producer of a segment's last slot links the next segment.
//
// Freeing a drained segment is where C++ differs from .NET, whose garbage collector keeps a
// segment alive for a thread that read its address just before it drained. Here:
//   1. The indices live in the queue, not in the segments, and a claim is a conditional
//      increment (a CAS that fails if the index moved), made before the thread touches the
//      segment. A successful claim proves the segment alive: the claimed slot is not consumed
//      yet, and a segment is freed only after all its slots are. (.NET's blind increment would
//      let a late producer land in a segment it holds no slot in.)
//   2. The consumer of the last slot frees the segment once every other slot has been read. A
//      slot whose consumer is still reading is marked kDestroy; that consumer, when done, sees the
//      mark and carries the walk on. One fetch_or per side decides who continues, without a lock.
// "Frees" means handing the segment to the Segments policy: NewDeleteSegments deletes it; a policy
// may keep it for a later take() instead. Reuse is as safe as a new segment: it comes after the
// point of deletion, and a thread still holding the old address fails its claim (indices grow).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

#include "../common/config.hpp"

namespace wslab::chase_lev {

// Items are moved in and out after the claim, when nothing may throw any more.
template <class T>
concept InjectorElement = std::is_nothrow_move_constructible_v<T> &&
                          std::is_nothrow_move_assignable_v<T> && std::is_nothrow_destructible_v<T>;

// Where segments come from and where drained ones go: take() gives a newly constructed segment
// (or throws std::bad_alloc), give_back() receives one that no thread reads any more (its last
// readers' accesses happen before the call).
template <class Segment>
struct NewDeleteSegments {
  Segment* take() { return new Segment; }
  void give_back(Segment* segment) noexcept { delete segment; }
};

template <InjectorElement T, std::size_t SegmentSlots = 32,
          template <class> class Segments = NewDeleteSegments>
class InjectorQueue {
  static_assert(SegmentSlots >= 2);
  // An index advances by one per slot plus one per segment: offset `index % kLap` ==
  // SegmentSlots means "the next segment is being linked; wait".
  static constexpr std::uint64_t kLap = SegmentSlots + 1;
  static constexpr std::uint32_t kWritten = 1;  // the producer has stored the item
  static constexpr std::uint32_t kRead = 2;     // the consumer has moved it out
  static constexpr std::uint32_t kDestroy = 4;  // the consumer must carry on freeing the segment

 public:
  InjectorQueue() {
    Segment* first = segments_.take();
    head_.segment.store(first, std::memory_order_relaxed);
    tail_.segment.store(first, std::memory_order_relaxed);
  }

  // Destroys the items still queued and frees the segments; no other thread may use the queue.
  ~InjectorQueue() {
    const std::uint64_t tail = tail_.index.load(std::memory_order_relaxed);
    Segment* s = head_.segment.load(std::memory_order_relaxed);
    for (std::uint64_t i = head_.index.load(std::memory_order_relaxed); i < tail; ++i) {
      if (i % kLap == SegmentSlots) {
        s = s->next.load(std::memory_order_relaxed);
      } else {
        s->slots[i % kLap].item()->~T();
      }
    }
    for (s = head_.segment.load(std::memory_order_relaxed); s != nullptr;)
      segments_.give_back(std::exchange(s, s->next.load(std::memory_order_relaxed)));
  }

  // May throw std::bad_alloc (nothing is queued then): the next segment is taken before the
  // claim of a last slot, so that nothing can fail after a claim.
  void push(T&& item) {
    Segment* next = nullptr;
    std::uint64_t tail = tail_.index.load(std::memory_order_acquire);
    for (unsigned spins = 0;; backoff(spins)) {
      const std::uint64_t offset = tail % kLap;
      if (offset == SegmentSlots) {  // another producer is linking the next segment
        tail = tail_.index.load(std::memory_order_acquire);
        continue;
      }
      const bool last = offset + 1 == SegmentSlots;
      if (last && next == nullptr) next = segments_.take();
      // acquire, after the index (acquire): the segment of `tail`, or a newer one, in which case
      // the index has moved on and the claim below fails.
      Segment* segment = tail_.segment.load(std::memory_order_acquire);
      // seq_cst: the claim, and the publication the parking protocol's re-scan must see.
      if (!tail_.index.compare_exchange_weak(tail, tail + 1, std::memory_order_seq_cst,
                                             std::memory_order_acquire)) {
        continue;
      }
      if (last) {  // link the next segment before anyone can claim a slot in it
        segment->next.store(next, std::memory_order_release);
        tail_.segment.store(std::exchange(next, nullptr), std::memory_order_release);
        // release: a producer that reads the new index (acquire) sees the new segment.
        tail_.index.fetch_add(1, std::memory_order_release);
      }
      Slot& slot = segment->slots[offset];
      ::new (static_cast<void*>(slot.storage)) T(std::move(item));
      // release: the consumer that acquires kWritten reads the whole item.
      slot.state.fetch_or(kWritten, std::memory_order_release);
      if (next != nullptr) segments_.give_back(next);  // taken for a last slot another claimed
      return;
    }
  }
  void push(const T& item)
    requires std::is_copy_constructible_v<T>
  {
    push(T(item));
  }

  // Hands the oldest item to `consume(T&&)` and returns true, or returns false if the queue was
  // empty: the item moves straight to where the caller wants it.
  template <class Consume>
    requires std::is_nothrow_invocable_v<Consume&, T&&>
  bool pop_with(Consume&& consume) noexcept {
    std::uint64_t head = head_.index.load(std::memory_order_acquire);
    for (unsigned spins = 0;; backoff(spins)) {
      const std::uint64_t offset = head % kLap;
      if (offset == SegmentSlots) {  // another consumer is moving head to the next segment
        head = head_.index.load(std::memory_order_acquire);
        continue;
      }
      if (nothing_beyond(head)) return false;
      Segment* segment = head_.segment.load(std::memory_order_acquire);
      if (!head_.index.compare_exchange_weak(head, head + 1, std::memory_order_seq_cst,
                                             std::memory_order_acquire)) {
        continue;
      }
      Slot& slot = segment->slots[offset];
      // acquire: pairs with the producer's release; the item (and the link) are visible.
      while ((slot.state.load(std::memory_order_acquire) & kWritten) == 0)
        backoff(spins);
      const bool last = offset + 1 == SegmentSlots;
      if (last) {  // the producer linked the next segment before it wrote this slot
        head_.segment.store(segment->next.load(std::memory_order_acquire),
                            std::memory_order_release);
        head_.index.fetch_add(1, std::memory_order_release);
      }
      T* item = slot.item();
      consume(std::move(*item));
      item->~T();
      if (last) {
        free_segment(segment, 0);
      } else if (slot.state.fetch_or(kRead, std::memory_order_acq_rel) & kDestroy) {
        free_segment(segment, offset + 1);  // the last slot's consumer left the walk to us
      }
      return true;
    }
  }

  // The oldest item moved into `out`, or into an optional; false or nothing if the queue was empty.
  bool try_pop(T& out) noexcept {
    return pop_with([&out](T&& item) noexcept { out = std::move(item); });
  }

  std::optional<T> pop() noexcept {
    std::optional<T> out;
    pop_with([&out](T&& item) noexcept { out.emplace(std::move(item)); });
    return out;
  }

  // A snapshot: true if no item was queued beyond the head when we looked.
  bool empty() noexcept { return nothing_beyond(head_.index.load(std::memory_order_seq_cst)); }

 private:
  struct Slot {
    T* item() noexcept { return std::launder(reinterpret_cast<T*>(storage)); }
    // Written by the slot's one producer before kWritten, read by its one consumer after: the
    // state word orders them, so the storage itself is plain memory.
    alignas(T) unsigned char storage[sizeof(T)];
    std::atomic<std::uint32_t> state{0};
  };
  struct Segment {
    std::atomic<Segment*> next{nullptr};
    Slot slots[SegmentSlots];
  };
  // Producers hammer one end, consumers the other: each on its own cache line.
  struct alignas(kCacheLineSize) End {
    std::atomic<std::uint64_t> index{0};
    std::atomic<Segment*> segment{nullptr};
    std::atomic<std::uint64_t> tail_seen{0};  // head_ only: a tail some consumer read
  };

  // True if no producer has claimed a slot at or beyond `head`. Consumers read the producers'
  // line only once they have taken every slot they last saw claimed (head_.tail_seen), so a
  // producer that stays ahead keeps that line in its own cache instead of losing it to every pop.
  bool nothing_beyond(std::uint64_t head) noexcept {
    // Relaxed: tail only grows, so a tail some consumer read proves those slots claimed.
    if (head < head_.tail_seen.load(std::memory_order_relaxed)) return false;
    // seq_cst: the emptiness check of the parking protocol's re-scan (parking.hpp).
    const std::uint64_t tail = tail_.index.load(std::memory_order_seq_cst);
    if (tail <= head) return true;
    head_.tail_seen.store(tail, std::memory_order_relaxed);  // a racing older value costs a re-read
    return false;
  }

  // Rule 2 above: frees `segment` once every slot from `start` to the last (excluded: its
  // consumer is the one that started) has been read, or hands the walk to a consumer still at it.
  void free_segment(Segment* segment, std::size_t start) noexcept {
    for (std::size_t i = start; i + 1 < SegmentSlots; ++i) {
      std::atomic<std::uint32_t>& state = segment->slots[i].state;
      // acquire: that reader's kRead (its reads come before the segment is freed). Only a slot
      // not yet read takes the RMW: acq_rel, so that whichever fetch_or comes second sees the
      // other's bit and carries on.
      if ((state.load(std::memory_order_acquire) & kRead) == 0 &&
          (state.fetch_or(kDestroy, std::memory_order_acq_rel) & kRead) == 0) {
        return;
      }
    }
    segments_.give_back(segment);
  }

  // The thread we wait for is between two steps of its own push or pop; it may be preempted.
  static void backoff(unsigned& spins) noexcept {
    if (spins < 6) {
      for (unsigned i = 0; i < (1u << spins); ++i)
        cpu_relax();
      ++spins;
    } else {
      std::this_thread::yield();
    }
  }

  End head_;
  End tail_;
  [[no_unique_address]] Segments<Segment> segments_;
};

}  // namespace wslab::chase_lev
