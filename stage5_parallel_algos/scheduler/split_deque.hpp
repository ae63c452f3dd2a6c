// A worker's split deque for join's forks (README.md, step 'Split deque'), after Lace's (van Dijk
// and van de Pol, "Lace: non-blocking split deque for work-stealing", 2014).
//
// The slots from the bottom up: [tail, split) is shared (thieves take from tail), [split, head) is
// private (the owner's alone). The owner pushes and pops its private part with plain loads and
// stores of its own fields: no fence, no read-modify-write. Thieves see only the shared part, and
// take from it with a CAS on one word holding both tail and split, so that a steal and any move of
// the split by the owner are ordered against each other.
//
// join's forks are strictly nested: every push is matched by a pop of the same job before any
// older job is popped, even when a callable throws (join takes b back before it rethrows). So a
// pop always asks for the newest job, and this deque needs no general LIFO pop.
//
// When the owner moves the split:
//   * push, when thieves have emptied the shared part: it shares the older half of its private
//     jobs (at least the one just pushed). Nothing is shared, so no thief's CAS can succeed until
//     the owner's store: a plain release store of the word is exact. (Lace has thieves raise a
//     flag and the owner share on request; sharing whenever the shared part is empty needs no
//     flag, and a parked thief is woken by the push's notify, as for any other work.) An owner
//     may also ask before it builds (next_private_slot()): a push that would share then goes
//     another way, and push_private() reads nothing (README.md, step 'Private forks').
//   * pop, when the newest job is in the shared part (the private part is empty): a CAS moves the
//     split below it, taking back the newer half of the shared jobs, unless a thief's CAS moved
//     the tail past it first: then it was stolen.
//   * release_stolen(), once the thief of a stolen job is done with it: until then the job's slot
//     stays reserved (the thief reads it after its CAS, so the owner must not refill it), and
//     nested forks go above it.
// Any thread may also trip the deque (trip()): the owner's next take-back then leaves its fast
// path, as for a shared job, and finds the trip there (untrip()); the split itself stays where
// it is. The scheduler reaches a worker that only forks this way (README.md, step 'Forks off the
// count').
//
// Why a stale thief is harmless. A thief reads the word, then CASes tail + 1 into it. If the word
// changed in between, the CAS fails. If it changed and came back to the same value (the owner
// took jobs back, ran them, and shared new ones in the same slots), the CAS succeeds, but the
// thief reads the slot only after it: it takes the job shared last, which is really shared, and
// its acquire CAS reads from the owner's release store that shared it (or from a steal's CAS after
// it, in that store's release sequence), so it sees the slot's new contents.
//
// Frames in the slots (README.md, step 'Frames in the slot'). Each slot is a cache line. A fork
// that fits builds its job right there, as Lace does (push_built()): the owner's fork writes one
// line it is about to read back, and no pointer; a thief runs the job in the slot, which is why a
// stolen job's slot stays reserved until its thief is done. A job that lives elsewhere (a frame
// in a joining stack) is pushed as a link to it (push()); a thief's steal() follows the link, so
// it returns the job itself either way. Thieves read a slot only after the CAS that took it, which
// reads from the release store that shared it: the whole frame is published by that one store.
//
// What checks it: SplitDeque.* in tests/split_deque_test.cpp, a nested-fork stress with thieves
// counting every job exactly once, which catches a pop that takes a shared job back without the
// CAS (SplitDequeReclaim::unchecked, below); SplitDequeTakeBack.*, the owner's scenario with
// pop() and with take_back(), which answers from the indices alone; SplitDequeFrames.*, the same
// stress with frames built in the slots, whose thieves check each frame's contents, taken back by
// take_back() and take_back_built() in turn.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>

#include "../../common/config.hpp"
#include "job.hpp"

namespace wslab::sched {

// A slot of the split deque: one cache line, where the owner builds the job it pushes.
inline constexpr std::size_t kJobSlotSize = 64;
struct alignas(kJobSlotSize) JobSlot {
  std::byte bytes[kJobSlotSize];
};

// Whether a job of type J can be built in a slot. Every job starts with its Job header (single
// inheritance, no virtual functions), so the slot's address is the job's.
template <class J>
inline constexpr bool fits_job_slot =
    sizeof(J) <= kJobSlotSize && alignof(J) <= kJobSlotSize && std::is_base_of_v<Job, J>;

// A slot's job that lives elsewhere: push()'s. Never executed: steal() returns its target.
class JobLink final : public Job {
 public:
  explicit JobLink(Job* target) noexcept : Job(&follow), target_(target) {}
  static bool is_link(const Job& job) noexcept { return job.executes(&follow); }
  Job* target() const noexcept { return target_; }

 private:
  static void follow(Job& self) noexcept { static_cast<JobLink&>(self).target_->execute(); }
  Job* target_;
};

// How pop() takes back a shared job. `unchecked` is a deliberately broken variant for tests: it
// reads the tail and moves the split with a plain store, so a thief's CAS between the two takes
// the same job.
enum class SplitDequeReclaim { cas, unchecked };

// How share_pushed() publishes the slots it shares. `relaxed` is a deliberately broken variant for
// tests: a thief's CAS then orders nothing, and its reads of a frame the owner built race with the
// owner's writes (ThreadSanitizer reports it: weakened_split_deque_share_test.cpp; x86 would
// not show it, its stores being ordered anyway).
enum class SplitDequeShare { release, relaxed };

// `Padded`: the thieves' word and the owner's fields on separate cache lines (the scheduler's
// workers are padded, worker.hpp).
template <SplitDequeReclaim Reclaim = SplitDequeReclaim::cas, bool Padded = true,
          SplitDequeShare Share = SplitDequeShare::release>
class BasicSplitDeque {
 public:
  // How a push ended: kept private, shared (the caller wakes a sleeper, as for any published
  // work), or not pushed because the deque is full (the caller forks some other way).
  enum class Pushed : std::uint8_t { kept, shared, full };

  // capacity 0: every push reports full (the step switched off). built_in_slots false: next_slot()
  // always answers nullptr, so every fork pushes a link (the step 'Frames in the slot' switched
  // off). The slots are raw memory: a page is touched only when a fork first reaches it.
  explicit BasicSplitDeque(std::uint32_t capacity, bool built_in_slots = true)
      : slots_(capacity ? new JobSlot[capacity] : nullptr),
        head_(slots_.get()),
        split_at_(slots_.get()),
        end_(slots_.get() + capacity),
        build_end_(built_in_slots ? end_ : slots_.get()),
        capacity_(capacity) {}
  BasicSplitDeque(const BasicSplitDeque&) = delete;
  BasicSplitDeque& operator=(const BasicSplitDeque&) = delete;

  // ---- The owner ----

  // Pushes a link to `job`, which lives elsewhere until it is taken back or its thief is done.
  [[gnu::always_inline]] Pushed push(Job* job) noexcept {
    if (head_ == end_) [[unlikely]]
      return Pushed::full;
    return push_built(::new (static_cast<void*>(head_)) JobLink(job));
  }

  // The owner's other push, for a job built in the slot: the slot the next push fills, or nullptr
  // when the deque is full (or building in slots is switched off). Build a job that fits_job_slot
  // there, then push_built(slot).
  [[gnu::always_inline]] void* next_slot() noexcept {
    if (head_ >= build_end_) return nullptr;
    if (head_ == nullptr) __builtin_unreachable();  // below build_end_: the slots exist
    return head_;
  }
  [[gnu::always_inline]] Pushed push_built(void* slot) noexcept {
    if (!push_built_private(slot)) [[unlikely]] {
      share_pushed();
      return Pushed::shared;
    }
    return Pushed::kept;
  }
  // push_built() in two halves, for an owner that shares out of line: true when the job stays
  // private; false when thieves have emptied the shared part, and the owner must call
  // share_pushed() before anything else touches the deque.
  [[gnu::always_inline]] bool push_built_private(void* slot) noexcept {
    raise_head(slot);
    // One relaxed load of a word only steals and the owner's rare moves write: while thieves
    // leave the shared part alone it stays in this core's cache.
    return tail_of(word_.load(std::memory_order_relaxed)) != split_;
  }
  // After a push_built_private() that returned false, the shared part empty (tail == split_):
  // shares the older half of the private jobs, rounded up. release: the slots' stores happen
  // before a thief's acquire CAS that takes one.
  [[gnu::noinline]] void share_pushed() noexcept {
    const std::uint32_t split = split_ + (index_of(head_) - split_ + 1) / 2;
    word_.store(pack(split_, split), Share == SplitDequeShare::release ? std::memory_order_release
                                                                       : std::memory_order_relaxed);
    set_split(split);
  }

  // The owner's third push, for a fork that takes another way (a push_built()) when it would have
  // to share: the slot the next push fills, or nullptr when the deque is full, building in slots
  // is switched off, or thieves have emptied the shared part. A job built there and pushed by
  // push_private() stays private, and the push reads nothing.
  [[gnu::always_inline]] void* next_private_slot() noexcept {
    void* slot = next_slot();
    if (slot == nullptr || tail_of(word_.load(std::memory_order_relaxed)) == split_) return nullptr;
    return slot;
  }
  [[gnu::always_inline]] void push_private(void* slot) noexcept { raise_head(slot); }

  // Takes back the newest job, `mine`, the job the owner pushed last (join's own, by the nesting
  // above): true, or false if a thief took it; then call release_stolen() once its thief is done
  // with it. By the nesting the owner knows the job, so nothing reads its slot.
  [[gnu::always_inline]] bool take_back([[maybe_unused]] const Job* mine) noexcept {
    const bool back = take_back_newest();
    WSLAB_ASSERT(!back || job_in(*head_) == mine);
    return back;
  }

  // take_back() for a job built in its slot by push_built(), named by that slot, so nothing reads
  // head_ back (by the nesting, head_ is one above it). A recursion's take-back then does not wait
  // for the store of head_ by the forks before it.
  [[gnu::always_inline]] bool take_back_built(const void* slot) noexcept {
    return take_back_built_private(slot) || reclaim_newest();
  }
  // take_back_built() in two halves, for an owner that reclaims out of line: true when the job is
  // back from the private part; false when it is the top of the shared part, and the owner must
  // call reclaim_newest() (true: back; false: stolen) before anything else touches the deque.
  [[gnu::always_inline]] bool take_back_built_private(const void* slot) noexcept {
    JobSlot* const at = static_cast<JobSlot*>(const_cast<void*>(slot));
    WSLAB_ASSERT(head_ == at + 1);
    head_ = at;
    return is_private(at);
  }
  // take_back() in the same two halves, for the newest job `mine` (head_ - 1).
  [[gnu::always_inline]] bool take_back_private([[maybe_unused]] const Job* mine) noexcept {
    JobSlot* const at = head_ - 1;
    head_ = at;
    const bool back = is_private(at);
    WSLAB_ASSERT(!back || job_in(*at) == mine);
    return back;
  }
  // After a take-back that found the newest job at the top of the shared part (head_ ==
  // split_ - 1): takes back the newer half of the shared part, this job included (true), unless a
  // thief took this job (false). Relaxed: the owner reads only its own slot, and the CAS's
  // atomicity alone orders it against every steal.
  // Also the second half of a take-back that a trip() sent here: the job is then private (true).
  [[gnu::noinline]] bool reclaim_newest() noexcept {
    untrip();
    if (is_private(head_)) return true;
    const std::uint32_t head = index_of(head_);
    std::uint64_t word = word_.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint32_t tail = tail_of(word);
      if (tail > head) {
        ++head_;  // stolen: the slot stays reserved until release_stolen()
        return false;
      }
      const std::uint32_t split = tail + (split_ - tail) / 2;  // <= head
      if constexpr (Reclaim == SplitDequeReclaim::unchecked) {
        word_.store(pack(tail, split), std::memory_order_relaxed);  // broken: see above
        set_split(split);
        return true;
      } else if (word_.compare_exchange_weak(word, pack(tail, split), std::memory_order_relaxed,
                                             std::memory_order_relaxed)) {
        set_split(split);
        return true;
      }
    }
  }

  // take_back() for an owner that asks which job came back: the newest job, or nullptr.
  Job* pop() noexcept { return take_back_newest() ? job_in(*head_) : nullptr; }

  // After pop() returned nullptr and the job's thief finished with it (the job's completion flag):
  // frees its slot. Every shared job is then taken (tail == split == head_ + 1): no thief's CAS can
  // succeed, and a plain store moves tail and split down to the freed slot.
  void release_stolen() noexcept {
    --head_;
    split_at_.store(head_, std::memory_order_relaxed);
    split_ = index_of(head_);
    word_.store(pack(split_, split_), std::memory_order_relaxed);
  }

  // Whether a trip() has come since the last untrip(), and if so, forgets it (the owner).
  // Every take-back calls it on its way out of line (reclaim_newest()); an owner that wants to
  // know calls it first (the scheduler: step 'Forks off the count').
  bool untrip() noexcept {
    JobSlot* const split_at = slots_.get() + split_;
    if (split_at_.load(std::memory_order_relaxed) == split_at) return false;
    split_at_.store(split_at, std::memory_order_relaxed);
    return true;
  }

  // ---- Thieves, and any thread ----

  // Sends the owner's next take-back out of line, to reclaim_newest(), which finds its job
  // private all the same: the owner's copy of the split is set to the end, above every slot.
  // A way to reach an owner that forks without ever leaving its fast path (the scheduler asks a
  // worker to close its steal session so). A hint: the owner's next move of the split overwrites
  // it, and a deque whose split is at its end already takes back out of line.
  void trip() noexcept { split_at_.store(end_, std::memory_order_relaxed); }

  // The oldest shared job, or nullptr when none is shared.
  Job* steal() noexcept {
    std::uint64_t word = word_.load(std::memory_order_acquire);
    for (;;) {
      const std::uint32_t tail = tail_of(word);
      if (tail >= split_of(word)) return nullptr;
      // acquire: reads from the owner's release store that shared the slot, or from a release
      // sequence after it (steals and the owner's CASs are RMWs), so the slot's load sees the job.
      if (word_.compare_exchange_weak(word, word + 1, std::memory_order_acquire,
                                      std::memory_order_acquire)) {
        return job_in(slots_[tail]);
      }
    }
  }

  // Whether a thief would find nothing: a hint (fork-join's thief_waiting()), and the parker's
  // re-scan (seq_cst on the caller's side; see the scheduler's any_work_queued()).
  bool nothing_shared(std::memory_order order = std::memory_order_relaxed) const noexcept {
    const std::uint64_t word = word_.load(order);
    return tail_of(word) >= split_of(word);
  }

  // The word holding the shared part's bounds, relaxed: a hint of whether the owner has shared or
  // taken back jobs, or a thief has stolen one, since an earlier read (the scheduler's pause).
  std::uint64_t shared_bounds() const noexcept { return word_.load(std::memory_order_relaxed); }

  std::uint32_t capacity() const noexcept { return capacity_; }

 private:
  static constexpr std::uint32_t tail_of(std::uint64_t word) noexcept {
    return static_cast<std::uint32_t>(word);
  }
  static constexpr std::uint32_t split_of(std::uint64_t word) noexcept {
    return static_cast<std::uint32_t>(word >> 32);
  }
  // The tail in the low half, so that a steal adds 1 to the whole word.
  static constexpr std::uint64_t pack(std::uint32_t tail, std::uint32_t split) noexcept {
    return (static_cast<std::uint64_t>(split) << 32) | tail;
  }

  // A push's move of head_ above `slot`, the slot next_slot() gave (head_ itself): a store of the
  // address the owner holds in a register, not ++head_. The increment in memory is a
  // read-modify-write that reads head_ back from the store of the fork before, and a recursion's
  // every fork paid for it (README.md, step 'Stored head').
  [[gnu::always_inline]] void raise_head(void* slot) noexcept {
    WSLAB_ASSERT(slot == head_);
    head_ = static_cast<JobSlot*>(slot) + 1;
  }

  std::uint32_t index_of(const JobSlot* slot) const noexcept {
    return static_cast<std::uint32_t>(slot - slots_.get());
  }
  // Moves the owner's copies of the split.
  void set_split(std::uint32_t split) noexcept {
    split_ = split;
    split_at_.store(slots_.get() + split, std::memory_order_relaxed);
  }

  // The job a slot holds: built there, or linked.
  static Job* job_in(JobSlot& slot) noexcept {
    Job* job = std::launder(reinterpret_cast<Job*>(&slot));
    return JobLink::is_link(*job) ? static_cast<JobLink*>(job)->target() : job;
  }

  // The owner's take-back: true when the newest job, at head_ afterwards, is back; false when a
  // thief took it (head_ then stays above its reserved slot).
  [[gnu::always_inline]] bool take_back_newest() noexcept { return take_back_at(head_ - 1); }
  // The same for the newest job, in slot `at` (head_ - 1): a compare of two addresses.
  [[gnu::always_inline]] bool take_back_at(JobSlot* at) noexcept {
    head_ = at;
    if (is_private(at)) [[likely]]
      return true;
    return reclaim_newest();
  }
  // Whether slot `at` lies in the private part, by the owner's copy of the split: one compare of
  // two addresses. A trip() makes it false for every slot until untrip().
  [[gnu::always_inline]] bool is_private(const JobSlot* at) const noexcept {
    return at >= split_at_.load(std::memory_order_relaxed);
  }

  static constexpr std::size_t kLine = Padded ? kCacheLineSize : alignof(std::uint64_t);
  // Written by thieves' steals and by the owner's moves of the split; on its own line.
  alignas(kLine) std::atomic<std::uint64_t> word_{0};
  // The owner's: the slots, head_ and its copies of the split (only the owner moves the split), as
  // an index (the word's) and as an address (the take-back's compare). head_ is an address too, so
  // that a fork's push and take-back compute no address from an index.
  alignas(kLine) std::unique_ptr<JobSlot[]> slots_;
  JobSlot* head_;
  // Written by trip() too, from any thread: atomic, relaxed (a hint; it orders nothing).
  std::atomic<JobSlot*> split_at_;
  std::uint32_t split_ = 0;
  JobSlot* const end_;
  JobSlot* const build_end_;  // end_, or the first slot: next_slot()'s bound
  const std::uint32_t capacity_;
};

using SplitDeque = BasicSplitDeque<>;

}  // namespace wslab::sched
