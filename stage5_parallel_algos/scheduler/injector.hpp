// The scheduler's injector: stage 4's lock-free segmented queue (stage4_chase_lev/
// injector_queue.hpp, whose opening comment and chapter give the design and the proof), storing
// the pool's 64-byte Tasks themselves, so that an external submission costs no allocation of its
// own; with drained segments kept for reuse (SpareSegments below) rather than deleted.
#pragma once

#include <atomic>
#include <cstddef>

#include "../../common/config.hpp"
#include "../../stage4_chase_lev/injector_queue.hpp"

namespace wslab::sched {

// The injector's Segments policy. Without it every SegmentSlots submissions cost a malloc on the
// producer's thread and a free on a consumer's, and glibc, trimming its heap after such frees,
// makes the new segment's pages fault in again. It keeps up to kSpares drained segments, each
// box taken or filled with one atomic exchange or CAS (so no ABA); a queue that grows longer
// than that deletes what it drains beyond them.
template <class Segment>
class SpareSegments {
 public:
  static constexpr std::size_t kSpares = 4;

  SpareSegments() = default;
  SpareSegments(const SpareSegments&) = delete;
  SpareSegments& operator=(const SpareSegments&) = delete;
  ~SpareSegments() {
    for (std::atomic<Segment*>& spare : spares_)
      delete spare.load(std::memory_order_relaxed);
  }

  Segment* take() {
    for (std::atomic<Segment*>& spare : spares_) {
      // acquire: pairs with give_back()'s release, after which the segment's last readers are
      // done with it.
      Segment* segment = nullptr;
      if (spare.load(std::memory_order_relaxed) != nullptr &&
          (segment = spare.exchange(nullptr, std::memory_order_acquire)) != nullptr) {
        // Constructed anew in place: the queue gets it as from `new`. Nobody else can reach it
        // until the queue publishes it (the release stores that link it in).
        segment->~Segment();
        return ::new (static_cast<void*>(segment)) Segment;
      }
    }
    return new Segment;
  }

  void give_back(Segment* segment) noexcept {
    for (std::atomic<Segment*>& spare : spares_) {
      Segment* empty = nullptr;
      // release: the producer that takes it (acquire above) reconstructs it after our reads.
      if (spare.load(std::memory_order_relaxed) == nullptr &&
          spare.compare_exchange_strong(empty, segment, std::memory_order_release,
                                        std::memory_order_relaxed)) {
        return;
      }
    }
    delete segment;
  }

 private:
  alignas(kCacheLineSize) std::atomic<Segment*> spares_[kSpares]{};
};

// An alias, not a class: the claims, the orderings the parking re-scan relies on and the freeing
// walk are stage 4's; only where segments come from and go to is the scheduler's.
template <class T, std::size_t SegmentSlots>
using InjectorQueue = chase_lev::InjectorQueue<T, SegmentSlots, SpareSegments>;

}  // namespace wslab::sched
