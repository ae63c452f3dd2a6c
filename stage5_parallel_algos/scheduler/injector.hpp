// InjectorQueue<T>: the lock-free multi-producer multi-consumer FIFO that carries external
// submissions into the scheduler. It stores the items themselves (the pool's 64-byte Tasks), so
// an external submission costs no allocation of its own. It is stage 4's queue
// (stage4_chase_lev/injector_queue.hpp) with two refinements: drained segments are reused, and
// consumers check the tail they last read before the producers' line (nothing_beyond()).
//
// The design is the segmented queue of .NET's ConcurrentQueue (see stage4_chase_lev/README.md):
// an unbounded array cut into fixed-size segments linked as they fill; each slot claimed by
// exactly one producer and one consumer through an atomic increment of a shared index; a per-slot
// state word closing the window between "slot claimed" and "item written".
//
// What .NET gets from its garbage collector we must do by hand: free a drained segment while a
// slow thread may still hold a pointer to it. Two choices make that safe without hazard pointers:
//   * The claim indices live in the queue, not in the segments, and a thread touches a segment
//     only after its claim succeeded. A successful claim proves the segment is still alive: the
//     claimed slot is not yet consumed, and a segment is freed only once all its slots are.
//     (This is why the claim is a compare-and-swap, a conditional increment, rather than a blind
//     fetch_add: a producer that overshoots the end of a segment with fetch_add would have to
//     touch a segment it holds no slot in.)
//   * A segment is freed by the last consumer to finish with it: the consumer of its last slot
//     starts the job, marking every slot whose consumer is still reading; each such consumer
//     carries the job on when it is done (slot state bit kDestroy).
// The same scheme is used by crossbeam's SegQueue in Rust. One difference: "freed" here means
// handed to the next segment switch when no spare is kept yet (take_spare_segment()), and only
// otherwise deleted. A reused segment is as safe as a new one: it is reused only after the point
// where it would have been deleted, and a thread still holding its old address fails its claim,
// because the indices only grow.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

#include "../../common/config.hpp"

namespace wslab::sched {

// Items are moved in by push() and out by pop(); neither may throw halfway.
template <class T>
concept InjectorElement = std::is_nothrow_move_constructible_v<T> &&
    std::is_nothrow_move_assignable_v<T> && std::is_nothrow_destructible_v<T>;

template <InjectorElement T, std::size_t SegmentSlots = 32>
class InjectorQueue {
  static_assert(SegmentSlots >= 2);

 public:
  InjectorQueue() {
    Segment* first = new Segment;
    head_.segment.store(first, std::memory_order_relaxed);
    tail_.segment.store(first, std::memory_order_relaxed);
  }

  InjectorQueue(const InjectorQueue&) = delete;
  InjectorQueue& operator=(const InjectorQueue&) = delete;

  // Destroys the items still queued and frees the segments. No other thread may be using it.
  ~InjectorQueue() {
    const std::uint64_t head = head_.index.load(std::memory_order_relaxed);
    const std::uint64_t tail = tail_.index.load(std::memory_order_relaxed);
    Segment* s = head_.segment.load(std::memory_order_relaxed);
    for (std::uint64_t i = head; i < tail; ++i) {
      const std::uint64_t offset = i % kLap;
      if (offset == SegmentSlots) {
        s = s->next.load(std::memory_order_relaxed);
        continue;
      }
      s->slots[offset].item()->~T();
    }
    s = head_.segment.load(std::memory_order_relaxed);
    while (s != nullptr) {
      Segment* next = s->next.load(std::memory_order_relaxed);
      delete s;
      s = next;
    }
    for (std::atomic<Segment*>& spare : spare_segments_)
      delete spare.load(std::memory_order_relaxed);
  }

  void push(const T& item) requires std::is_copy_constructible_v<T> { push(T(item)); }

  // Moved straight into its slot: the pool's 64-byte Task is not copied on the way.
  void push(T&& item) {
    Segment* spare = nullptr;  // the next segment, allocated before we claim the last slot
    std::uint64_t tail = tail_.index.load(std::memory_order_acquire);
    unsigned spins = 0;
    for (;;) {
      const std::uint64_t offset = tail % kLap;
      if (offset == SegmentSlots) {
        // Another producer took the last slot and is linking the next segment: wait for it.
        backoff(spins);
        tail = tail_.index.load(std::memory_order_acquire);
        continue;
      }
      if (offset + 1 == SegmentSlots && spare == nullptr) spare = take_spare_segment();
      // Loaded after the index (acquire above pairs with the release fetch_add that follows a
      // segment switch), so it is the segment of `tail` or, if a switch raced us, a newer one;
      // in that case the CAS below fails because the index moved on.
      Segment* segment = tail_.segment.load(std::memory_order_acquire);
      // seq_cst: the claim. It is in the total order with the consumers' seq_cst load of the
      // tail index and with the pool's parking fences (the Dekker pair in parking.hpp).
      if (tail_.index.compare_exchange_weak(tail, tail + 1, std::memory_order_seq_cst,
                                            std::memory_order_acquire)) {
        if (offset + 1 == SegmentSlots) {
          // We own the last slot: link the next segment before anyone may need it.
          segment->next.store(spare, std::memory_order_release);
          tail_.segment.store(spare, std::memory_order_release);
          // Skip the switching offset. release: a producer that reads this index sees the
          // segment pointer stored above.
          tail_.index.fetch_add(1, std::memory_order_release);
          spare = nullptr;
        }
        Slot& slot = segment->slots[offset];
        ::new (static_cast<void*>(slot.storage)) T(std::move(item));
        // release: the consumer that acquires kWritten reads the item (and what it owns).
        slot.state.fetch_or(kWritten, std::memory_order_release);
        if (spare != nullptr) recycle(spare);  // taken for a last slot somebody else won
        return;
      }
      backoff(spins);
    }
  }

  // The oldest item, or nothing if the queue looked empty.
  std::optional<T> pop() {
    std::optional<T> out;
    pop_with([&](T&& item) noexcept { out.emplace(std::move(item)); });
    return out;
  }

  // Moves the oldest item into `out` and returns true, or returns false if the queue looked
  // empty (`out` untouched).
  bool try_pop(T& out) noexcept {
    return pop_with([&](T&& item) noexcept { out = std::move(item); });
  }

  // Hands the oldest item to `consume(T&&)` (which must not throw) and returns true, or returns
  // false if the queue looked empty. Lets a caller move the item straight to where it belongs.
  template <class Consume>
  bool pop_with(Consume&& consume) noexcept {
    std::uint64_t head = head_.index.load(std::memory_order_acquire);
    unsigned spins = 0;
    for (;;) {
      const std::uint64_t offset = head % kLap;
      if (offset == SegmentSlots) {  // a consumer is moving head to the next segment
        backoff(spins);
        head = head_.index.load(std::memory_order_acquire);
        continue;
      }
      if (nothing_beyond(head)) return false;
      Segment* segment = head_.segment.load(std::memory_order_acquire);
      // seq_cst: the claim; only one consumer moves head past any slot.
      if (head_.index.compare_exchange_weak(head, head + 1, std::memory_order_seq_cst,
                                            std::memory_order_acquire)) {
        if (offset + 1 == SegmentSlots) {
          // We took the last slot: the producer of that slot links the next segment before it
          // writes the slot, so waiting for the slot below also waits for the link.
          wait_for(segment->slots[offset], kWritten);
          Segment* next = segment->next.load(std::memory_order_acquire);
          head_.segment.store(next, std::memory_order_release);
          head_.index.fetch_add(1, std::memory_order_release);
        }
        Slot& slot = segment->slots[offset];
        // acquire: pairs with the producer's release of kWritten.
        wait_for(slot, kWritten);
        T* item = slot.item();
        consume(std::move(*item));
        item->~T();
        if (offset + 1 == SegmentSlots) {
          destroy(segment, 0);
        } else if (slot.state.fetch_or(kRead, std::memory_order_acq_rel) & kDestroy) {
          // The last slot's consumer asked us to finish freeing the segment.
          destroy(segment, offset + 1);
        }
        return true;
      }
      backoff(spins);
    }
  }

 public:
  // A snapshot: true if no item was claimed beyond the head when we looked.
  bool empty() noexcept {
    const std::uint64_t head = head_.index.load(std::memory_order_seq_cst);
    return nothing_beyond(head);
  }

 private:
  // An index advances by one per slot plus one "switching" value per segment, so the offset
  // `index % kLap` equals SegmentSlots exactly while a segment switch is in progress.
  static constexpr std::uint64_t kLap = SegmentSlots + 1;
  static constexpr std::uint32_t kWritten = 1;  // the producer stored the value
  static constexpr std::uint32_t kRead = 2;     // the consumer finished reading it
  static constexpr std::uint32_t kDestroy = 4;  // the consumer must continue freeing the segment

  struct Slot {
    T* item() noexcept { return std::launder(reinterpret_cast<T*>(storage)); }
    // Written by the slot's one producer before kWritten, read by its one consumer after: the
    // state word's release/acquire orders them, so the storage itself need not be atomic.
    alignas(T) unsigned char storage[sizeof(T)];
    std::atomic<std::uint32_t> state{0};
  };
  struct Segment {
    std::atomic<Segment*> next{nullptr};
    Slot slots[SegmentSlots];
  };
  struct alignas(kCacheLineSize) End {
    std::atomic<std::uint64_t> index{0};
    std::atomic<Segment*> segment{nullptr};
    // head_ only: a tail value some consumer read (every index below it was claimed by a
    // producer). On the consumers' line, so that they consult the producers' line less often.
    std::atomic<std::uint64_t> tail_seen{0};
  };

  // True if no producer has claimed a slot at or beyond `head`. Consumers read the tail line
  // only through here, and only once the slots they last saw claimed are taken (head_.tail_seen):
  // a producer that keeps ahead of them then finds the tail line still in its own cache when it
  // claims the next slot, instead of losing it to every consumer's check.
  bool nothing_beyond(std::uint64_t head) noexcept {
    // A "not empty" answer from tail_seen needs no ordering: it is a tail some consumer read, and
    // tail only grows, so those slots really were claimed.
    const std::uint64_t seen = head_.tail_seen.load(std::memory_order_relaxed);
    if (head < seen) return false;
    // seq_cst: the emptiness check of the Dekker pair with parking (a producer's claim either
    // precedes this load in S, and we see its slot, or it follows our fence in S).
    const std::uint64_t tail = tail_.index.load(std::memory_order_seq_cst);
    if (tail == head) return true;
    // Relaxed: a hint. A racing consumer may store an older value; that only costs a re-read.
    if (tail > seen) head_.tail_seen.store(tail, std::memory_order_relaxed);
    return false;
  }

  static void backoff(unsigned& spins) noexcept {
    if (spins < 6) {
      for (unsigned i = 0; i < (1u << spins); ++i)
        cpu_relax();
      ++spins;
    } else {
      std::this_thread::yield();  // the thread we wait for may have been preempted
    }
  }

  static void wait_for(Slot& slot, std::uint32_t bit) noexcept {
    unsigned spins = 0;
    while ((slot.state.load(std::memory_order_acquire) & bit) == 0)
      backoff(spins);
  }

  // A drained segment is kept for the next segment switch rather than freed: otherwise every
  // SegmentSlots submissions cost a malloc on the producer's thread and a free on a consumer's,
  // and glibc, trimming its heap after such frees, made the new segment's pages fault in again.
  // A few spares are kept (kSpares
  // boxes, each taken or filled with one atomic exchange or CAS, so no ABA); a queue that grows
  // longer than that frees what it drains beyond them.
  Segment* take_spare_segment() {
    Segment* segment = nullptr;
    for (std::atomic<Segment*>& spare : spare_segments_) {
      // acquire: pairs with recycle()'s release, after which the segment's last readers are done.
      if (spare.load(std::memory_order_relaxed) != nullptr &&
          (segment = spare.exchange(nullptr, std::memory_order_acquire)) != nullptr) {
        break;
      }
    }
    if (segment == nullptr) return new Segment;
    // Relaxed: nobody else can reach this segment until we publish it (the release stores that
    // link it in push()).
    segment->next.store(nullptr, std::memory_order_relaxed);
    for (Slot& slot : segment->slots)
      slot.state.store(0, std::memory_order_relaxed);
    return segment;
  }

  void recycle(Segment* segment) noexcept {
    for (std::atomic<Segment*>& spare : spare_segments_) {
      Segment* empty = nullptr;
      // release: the producer that takes it (acquire above) resets it after our reads of it.
      if (spare.load(std::memory_order_relaxed) == nullptr &&
          spare.compare_exchange_strong(empty, segment, std::memory_order_release,
                                        std::memory_order_relaxed)) {
        return;
      }
    }
    delete segment;
  }

  // Recycles `segment` once every slot from `start` on (the last excluded: its consumer is the
  // one that started) has been read. A slot still being read gets kDestroy, and its consumer calls
  // destroy() again when it is done; the fetch_or decides between us without a lock.
  void destroy(Segment* segment, std::size_t start) noexcept {
    for (std::size_t i = start; i + 1 < SegmentSlots; ++i) {
      Slot& slot = segment->slots[i];
      // acq_rel: acquire the reader's kRead (its read is done before we free); release our
      // intent to a reader still at work.
      if ((slot.state.load(std::memory_order_acquire) & kRead) == 0 &&
          (slot.state.fetch_or(kDestroy, std::memory_order_acq_rel) & kRead) == 0) {
        return;  // that slot's consumer will continue from i + 1
      }
    }
    recycle(segment);
  }

  End head_;
  End tail_;
  static constexpr std::size_t kSpares = 4;
  alignas(kCacheLineSize) std::atomic<Segment*> spare_segments_[kSpares]{};
};

}  // namespace wslab::sched
