// WorkStealingQueue<T>: the owner pushes and pops at the tail with no lock on the fast path;
// any other thread steals from the head under the queue's lock. After Joe Duffy's
// WorkStealingQueue (2008), with every ordering stated in C++ terms.
//
// Layout: a power-of-two ring indexed by two 64-bit counters, head (the next item a thief takes)
// and tail (one past the owner's newest item). The live items are [head, tail); slot i lives at
// ring[i & mask]. A push raises tail and a pop lowers it (putting it back when a thief won the
// last item); a steal raises head, and a thief that finds the queue empty puts it back. The
// counters never wrap in practice (2^63 pushes).
//
// Who touches what:
//  - tail: written only by the owner. head: written only by thieves, under the lock.
//    ring_ and mask_: replaced only by the owner (when it grows the ring), under the lock.
//  - A thief reads a slot only under the lock, after it has claimed that slot (see steal). The
//    owner's lock-free push writes slot `tail`, and the ring always keeps one spare slot
//    (capacity - 1 items at most on the fast path), so that slot is never the one a thief may
//    still be reading: the slot just behind head. Slot reuse is ordered by head's release stores.
//
// The one real race is over the last item, between the owner's pop and a steal; it is explained
// in pop() and take_head().
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "../common/config.hpp"

namespace wslab {

template <class T>
class WorkStealingQueue {
 public:
  enum class StealResult { taken, empty, contended };

  explicit WorkStealingQueue(std::size_t initial_capacity = 32)
      : ring_(std::make_unique<T[]>(checked_capacity(initial_capacity))),
        mask_(static_cast<std::int64_t>(initial_capacity) - 1) {}

  WorkStealingQueue(const WorkStealingQueue&) = delete;
  WorkStealingQueue& operator=(const WorkStealingQueue&) = delete;

  // Owner thread only. Lock-free unless the ring is (nearly) full, then it grows under the lock.
  void push(T item) {
    const std::int64_t tail = tail_.load(std::memory_order_relaxed);  // we are its only writer
    // acquire: a head we read was stored after the thief that freed those slots had moved their
    // items out, so reusing a slot below head never overlaps that thief's read.
    const std::int64_t head = head_.load(std::memory_order_acquire);
    if (tail - head < mask_) {
      ring_[tail & mask_] = std::move(item);
      // release: a thief that sees the new tail also sees the item stored in its slot.
      tail_.store(tail + 1, std::memory_order_release);
      return;
    }
    push_slow(std::move(item));
  }

  // Owner thread only. Takes the newest item (LIFO). Lock-free unless this may be the last item.
  bool pop(T& out) {
    const std::int64_t tail = tail_.load(std::memory_order_relaxed) - 1;
    // Empty, without a fence. A thief that found the queue empty moves head up for a moment
    // before restoring it; if we read that value we report empty although our newest item is
    // there. Harmless: that thief is awake and searching and looks again after restoring head,
    // and our next pop finds the item. Duffy's queue has the same window.
    if (head_.load(std::memory_order_acquire) > tail) return false;
    // Claim slot `tail` first, then look at head: a store followed by a load of another variable.
    // A thief does the mirror image (store head, then load tail). If both were allowed to read the
    // other's old value, both would take the last item. Duffy closes this with an interlocked
    // exchange, which on x86 is a full fence. In C++ that guarantee comes from making exactly
    // these four accesses seq_cst: all seq_cst operations form one total order, so whichever store
    // comes first in it is seen by the other thread's load. (acquire/release would not do: they
    // never stop a store from being reordered after a later load.) We use seq_cst operations
    // rather than relaxed ones plus atomic_thread_fence because ThreadSanitizer models the former
    // exactly; on x86-64 GCC emits xchg for the store, just like Duffy's exchange.
    tail_.store(tail, std::memory_order_seq_cst);
    const std::int64_t head = head_.load(std::memory_order_seq_cst);
    if (head <= tail) {
      // At least one item left after ours, or a thief that comes later sees our tail: slot
      // `tail` is ours alone.
      out = std::move(ring_[tail & mask_]);
      return true;
    }
    // head passed us: a thief may have taken the last item, or may be about to give it back
    // (a thief that finds the queue empty restores head). The lock settles it.
    std::lock_guard<std::mutex> lock(mutex_);
    if (head_.load(std::memory_order_relaxed) <= tail) {
      out = std::move(ring_[tail & mask_]);
      return true;
    }
    // The thief won. Put tail back: the queue is empty, and head == tail + 1 must not linger.
    tail_.store(tail + 1, std::memory_order_relaxed);
    return false;
  }

  // Any thread but the owner. Takes the oldest item (FIFO) without ever waiting for the lock:
  // `contended` means another thief (or the owner's slow path) held it.
  StealResult try_steal(T& out) {
    if (looks_empty()) return StealResult::empty;
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return StealResult::contended;
    return take_head(out) ? StealResult::taken : StealResult::empty;
  }

  // Any thread but the owner. Like try_steal(), but waits for the lock.
  bool steal(T& out) {
    if (looks_empty()) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    return take_head(out);
  }

  // A snapshot that may be stale by the time it returns; for heuristics and statistics.
  std::size_t size_hint() const noexcept {
    const std::int64_t n =
        tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire);
    return n > 0 ? static_cast<std::size_t>(n) : 0;
  }
  bool looks_empty() const noexcept { return size_hint() == 0; }

  // Owner thread only (or under no concurrency): the current ring size.
  std::size_t capacity() const noexcept { return static_cast<std::size_t>(mask_ + 1); }

 private:
  static std::size_t checked_capacity(std::size_t capacity) {
    if (capacity < 2 || (capacity & (capacity - 1)) != 0) {
      throw std::invalid_argument("WorkStealingQueue: the capacity must be a power of two >= 2");
    }
    return capacity;
  }

  // Called under the lock. The thief's half of the last-item race (see pop()).
  bool take_head(T& out) {
    const std::int64_t head = head_.load(std::memory_order_relaxed);  // only written under lock
    // seq_cst store, then seq_cst load: see pop(). The store is also a release, which orders our
    // earlier move-outs (and earlier thieves', through the lock) before the owner's slot reuse.
    head_.store(head + 1, std::memory_order_seq_cst);
    if (head < tail_.load(std::memory_order_seq_cst)) {
      // Slot `head` is ours. The owner cannot be writing it: its pushes stay a spare slot away,
      // and its pop saw our head (or takes the lock) before touching the last slot.
      out = std::move(ring_[head & mask_]);
      return true;
    }
    // Empty: give the slot back. release keeps the slot-reuse chain described above intact.
    head_.store(head, std::memory_order_release);
    return false;
  }

  // The ring is full (or head moved since we looked): take the lock, which keeps thieves out of
  // the ring while it is replaced, and grow it if there still is no room.
  void push_slow(T item) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::int64_t tail = tail_.load(std::memory_order_relaxed);
    const std::int64_t head = head_.load(std::memory_order_relaxed);
    if (tail - head >= mask_) {
      const std::int64_t new_capacity = (mask_ + 1) * 2;
      auto bigger = std::make_unique<T[]>(static_cast<std::size_t>(new_capacity));
      const std::int64_t new_mask = new_capacity - 1;
      // Indices keep their values; only the slot each maps to changes.
      for (std::int64_t i = head; i < tail; ++i)
        bigger[i & new_mask] = std::move(ring_[i & mask_]);
      ring_ = std::move(bigger);
      mask_ = new_mask;
    }
    ring_[tail & mask_] = std::move(item);
    tail_.store(tail + 1, std::memory_order_release);
  }

  // The owner's index and the thieves' index on separate cache lines: the owner's every push and
  // pop writes tail, and a thief's every steal writes head.
  alignas(kCacheLineSize) std::atomic<std::int64_t> tail_{0};
  alignas(kCacheLineSize) std::atomic<std::int64_t> head_{0};
  alignas(kCacheLineSize) std::mutex mutex_;
  std::unique_ptr<T[]> ring_;
  std::int64_t mask_;  // capacity - 1
};

}  // namespace wslab
