// PerWorker<T>: one T per thread that runs a pool's work, reached without locks, folded together
// at the end; oneTBB's combinable for any wslab pool.
//
//   wslab::PerWorker<long> hits(pool);                   // each slot starts as long() == 0
//   wslab::parallel_for(pool, 0, n, [&](int i) { if (test(i)) ++hits.local(); });
//   long total = hits.combine(std::plus<>{});
//
//   wslab::PerWorker<Histogram> h(pool, [] { return Histogram(bins); });  // an initializer
//
// Slots. One per worker of the pool, indexed by this_worker_index() (below), and one
// per other thread that calls local(): the thread that calls parallel_for or join and runs pieces
// inline, a stage-5 guest, a worker of another pool. Every slot starts on its own cache line, so
// threads updating their own slots do not slow each other down. A slot's T is made by its
// thread's first local() call, by the initializer or, without one, value-initialised (T()); a
// slot nobody asked for has no T and is skipped by combine() and for_each().
//
// Thread safety. local() may be called from any thread at any time, concurrently with other
// local() calls; it returns the calling thread's own T, which no other thread ever gets. The
// reference stays valid until clear() or destruction. combine(), for_each(), clear() and the
// destructor must not overlap any local() call or any use of a reference it returned: call them
// once the work is done (parallel_for or join returned, TaskGroup::wait(), wait_idle()); that
// completion also makes every slot's writes visible to them.
//
// Lifetime. The constructor reads the pool's address and thread count and never touches the
// pool again: a PerWorker may outlive its pool, and combine() or local() after the pool is gone
// are fine. A worker's slot belongs to its index in a pool at that address: should a new pool be
// built there later, its worker i continues worker i's slot (never while the old one runs).
#pragma once

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include "../../common/config.hpp"
#include "../../common/thread_pool.hpp"
#include "../../common/worker_identity.hpp"
#include "../fork_join/thread_record.hpp"
#include "../scheduler/port.hpp"

namespace wslab {

// this_worker_index(): which worker of its pool the calling thread is, as an index in
// [0, thread_count()), on every pool of the lab; PerWorker (below) keys its slots on it.
//
//   if (std::optional<std::size_t> i = wslab::this_worker_index(pool)) partial[*i] += x;
//
// A worker reports its index from the moment it starts (its on_worker_start hook included) until
// its pool is destroyed; a thread keeps the same index for its whole life as a worker. Every other
// thread gets std::nullopt: threads outside any pool, and threads that only help, such as the one
// calling parallel_for or join, which runs pieces of the work inline.
//
// The stage-5 guest seat: a thread from outside that sits on it (an outside join or parallel_for
// on a stage-5 pool) counts as one of the pool's workers for owns_current_thread(), but reports
// no index while it sits there. The seat is not a worker: successive outside threads share it,
// so an index for it could not key per-thread state, and the seated thread's own role (a worker
// of another pool, perhaps) is suspended until it leaves, when its index comes back.

namespace detail {

// How a pool's workers name it in this_thread_identity.pool: every pool passes `this`, the
// address of the complete pool object, to WorkerThreads::start. (A cast to void* needs no RTTI.)
inline const void* worker_key(const IThreadPool& pool) noexcept {
  return dynamic_cast<const void*>(&pool);
}

// The calling thread's index among the `workers` workers of the pool named `key`. Reads only the
// thread's own identity, never the pool, so it stays safe once the pool is gone. The bound
// excludes the stage-5 guest seat, which carries the index one past the workers'; an orphaned
// worker (its pool was destroyed by its own task) no longer belongs to anything.
inline std::optional<std::size_t> worker_index_for(const void* key, std::size_t workers) noexcept {
  const WorkerIdentity& me = this_thread_identity;
  if (me.pool != key || me.orphaned || me.index >= workers) return std::nullopt;
  return me.index;
}

}  // namespace detail

// The calling thread's index among `pool`'s workers, in [0, pool.thread_count()); std::nullopt on
// any thread that is not one of them (a seated guest included). Wait-free; touches only the
// calling thread's identity and pool.thread_count().
inline std::optional<std::size_t> this_worker_index(const IThreadPool& pool) noexcept {
  return detail::worker_index_for(detail::worker_key(pool), pool.thread_count());
}

// The calling thread's index among the workers of whichever pool it works for; std::nullopt on
// a thread that works for none (a seated guest included).
inline std::optional<std::size_t> this_worker_index() noexcept {
  const WorkerIdentity& me = this_thread_identity;
  if (me.pool == nullptr || me.orphaned) return std::nullopt;
  // Only a stage-5 thread has a context, and only the guest's identity is out of its pool's range.
  if (const sched::WorkerContext* ctx = sched::this_thread_worker;
      ctx->pool != nullptr && me.index >= ctx->pool->thread_count()) {
    return std::nullopt;
  }
  return me.index;
}

// ---- PerWorker ----

namespace detail {

// Keys the slots of threads that are not the pool's workers. Never reused (std::thread::id is,
// once a thread ends), so no two threads ever share a slot, not even one after the other.
inline std::uint64_t this_thread_token() noexcept {
  static std::atomic<std::uint64_t> next{1};
  std::uint64_t& token = this_fork_join_thread.token;
  if (token == 0) token = next.fetch_add(1, std::memory_order_relaxed);
  return token;
}

// A T returned by value is built in place (no move: T may be immovable); anything else converts.
template <class R, class T>
concept MakesValue = std::same_as<std::remove_cv_t<R>, T> || std::constructible_from<T, R>;

// How an initializer is called: as a const object.
template <class Init>
using InitRef = const std::decay_t<Init>&;
template <class Init>
using InitCall = std::invoke_result_t<InitRef<Init>>;

}  // namespace detail

// A callable that makes a slot's first value: called as a const object, once per slot, from the
// slot's thread, possibly from several threads at once.
template <class Init, class T>
concept PerWorkerInitializer =
    std::constructible_from<std::decay_t<Init>, Init> &&
    std::is_invocable_v<detail::InitRef<Init>> && detail::MakesValue<detail::InitCall<Init>, T>;

// combine()'s fold: acc = op(std::move(acc), value).
template <class Op, class T>
concept PerWorkerFold = std::copy_constructible<T> && std::is_invocable_v<Op&, T&&, const T&> &&
                        std::is_assignable_v<T&, std::invoke_result_t<Op&, T&&, const T&>>;

// A wrapper that hands out its pool, like ThreadPool::scheduler().
template <class P>
concept HasSchedulerPool = !std::derived_from<P, IThreadPool> && requires(P& wrapper) {
  { wrapper.scheduler() } -> std::convertible_to<const IThreadPool&>;
};

template <class T>
class PerWorker {
  static_assert(std::is_object_v<T> && !std::is_const_v<T> && !std::is_array_v<T>,
                "PerWorker<T> needs a non-const object type that is not an array");
  static_assert(std::is_nothrow_destructible_v<T>, "clear() and the destructor must not throw");

 public:
  // Slots start as T(). Allocates the workers' slots (one padded slot per worker, made here,
  // their T's made on first use); throws std::bad_alloc if it cannot.
  explicit PerWorker(const IThreadPool& pool)
    requires std::default_initializable<T>
      : key_(detail::worker_key(pool)),
        worker_count_(pool.thread_count()),
        workers_(new WorkerSlot[worker_count_]) {}

  // Slots start as T(init()). Also allocates once to hold `init`.
  template <PerWorkerInitializer<T> Init>
  PerWorker(const IThreadPool& pool, Init&& init)
      : key_(detail::worker_key(pool)),
        worker_count_(pool.thread_count()),
        workers_(new WorkerSlot[worker_count_]),
        init_(std::make_unique<MakerOf<std::decay_t<Init>>>(std::forward<Init>(init))) {}

  // The same over a ThreadPool (anything whose scheduler() is the pool).
  template <HasSchedulerPool Pool>
  explicit PerWorker(Pool& pool)
    requires std::default_initializable<T>
      : PerWorker(static_cast<const IThreadPool&>(pool.scheduler())) {}
  template <HasSchedulerPool Pool, PerWorkerInitializer<T> Init>
  PerWorker(Pool& pool, Init&& init)
      : PerWorker(static_cast<const IThreadPool&>(pool.scheduler()), std::forward<Init>(init)) {}

  // Slots are handed out by address: neither copied nor moved.
  PerWorker(const PerWorker&) = delete;
  PerWorker& operator=(const PerWorker&) = delete;

  ~PerWorker() { clear(); }

  // The calling thread's T, made on its first call. Takes no lock. On a worker of the pool: its
  // slot, found by index (a thread-local load and three compares). On any other thread: its slot
  // in a lock-free list of those threads' slots, found by a walk of that list; its first call
  // allocates the slot and pushes it with a CAS. Throws what the initializer or T() throws, or
  // std::bad_alloc, on a thread's first call; the slot then stays unused and the next call
  // tries again.
  T& local() {
    if (const std::optional<std::size_t> i = detail::worker_index_for(key_, worker_count_)) {
      WorkerSlot& slot = workers_[*i];
      if (!slot.used) [[unlikely]] {
        make_value(std::addressof(slot.value));
        slot.used = true;
      }
      return slot.value;
    }
    return other_thread_local();
  }

  // Folds the used slots: the first one's value, copied, then acc = op(std::move(acc), value) for
  // each further one, the workers' slots in index order first. Which thread ran which piece of
  // work is not deterministic, so op should be associative and commutative. With no used slot it
  // returns what a first local() would have made. Propagates what op, T's copy or the initializer
  // throws; the slots are left as they were.
  template <PerWorkerFold<T> Op>
  T combine(Op op) const {
    std::optional<T> acc;
    for_each([&](const T& value) {
      if (!acc) {
        acc.emplace(value);
      } else {
        *acc = std::invoke(op, std::move(*acc), value);
      }
    });
    if (!acc) return new_value();
    return std::move(*acc);
  }

  // f(value) for every used slot, in combine()'s order. What f throws propagates; the slots
  // visited before stay as f left them.
  template <std::invocable<T&> F>
  void for_each(F&& f) {
    visit(*this, f);
  }
  template <std::invocable<const T&> F>
  void for_each(F&& f) const {
    visit(*this, f);
  }

  // Destroys every slot's T, so that the next local() on each thread makes a new one; frees the
  // other threads' slots (the workers' stay allocated, unused).
  void clear() noexcept {
    for (std::size_t i = 0; i < worker_count_; ++i) {
      WorkerSlot& slot = workers_[i];
      if (slot.used) {
        std::destroy_at(std::addressof(slot.value));
        slot.used = false;
      }
    }
    OtherSlot* s = others_.exchange(nullptr, std::memory_order_acquire);
    while (s != nullptr) {
      OtherSlot* next = s->next;
      std::destroy_at(std::addressof(s->value));
      delete s;
      s = next;
    }
  }

 private:
  // Every slot's T starts a cache line. One alignas, not alignas(line) alignas(T): GCC 12 keeps
  // only the last of several.
  static constexpr std::size_t kSlotAlign = std::max(kCacheLineSize, alignof(T));

  // A worker's slot: touched by that worker only (until combine() and the like).
  struct alignas(kSlotAlign) WorkerSlot {
    WorkerSlot() noexcept {}
    ~WorkerSlot() {}  // clear() destroys the value
    union {
      T value;  // alive while `used`
    };
    bool used = false;
  };
  static_assert(alignof(WorkerSlot) == kSlotAlign);

  // Another thread's slot. The key and link, which other threads read while walking the list,
  // sit on a line of their own: the owner's writes to its value do not disturb their walks.
  struct alignas(kSlotAlign) OtherSlot {
    explicit OtherSlot(std::uint64_t owner_token) noexcept : owner(owner_token) {}
    ~OtherSlot() {}  // clear() destroys the value
    const std::uint64_t owner;
    OtherSlot* next = nullptr;
    union {
      alignas(kSlotAlign) T value;  // alive once the slot is in the list
    };
  };

  struct Maker {
    virtual ~Maker() = default;
    virtual T make() const = 0;
  };
  template <class F>
  struct MakerOf final : Maker {
    template <class G>
    explicit MakerOf(G&& g) : fn(std::forward<G>(g)) {}
    T make() const override { return static_cast<T>(std::invoke(fn)); }
    F fn;
  };

  T new_value() const {
    if (init_) return init_->make();
    return T();
  }
  // Constructs in place, so that T need not be movable.
  void make_value(T* where) const {
    if (init_) {
      ::new (static_cast<void*>(where)) T(init_->make());
    } else {
      ::new (static_cast<void*>(where)) T();
    }
  }

  [[gnu::noinline]] T& other_thread_local() {
    const std::uint64_t me = detail::this_thread_token();
    // acquire: pairs with the pushes' release, so a slot found here is fully built. Only this
    // thread pushes a slot with its token, so one that is not in the list yet is not anywhere.
    for (OtherSlot* s = others_.load(std::memory_order_acquire); s != nullptr; s = s->next) {
      if (s->owner == me) return s->value;
    }
    auto slot = std::make_unique<OtherSlot>(me);
    make_value(std::addressof(slot->value));  // if it throws, the slot is freed, never listed
    slot->next = others_.load(std::memory_order_relaxed);
    while (!others_.compare_exchange_weak(slot->next, slot.get(), std::memory_order_release,
                                          std::memory_order_relaxed)) {
    }
    return slot.release()->value;
  }

  // Self is PerWorker or const PerWorker: f gets T& or const T&.
  template <class Self, class F>
  static void visit(Self& self, F& f) {
    using Value = std::conditional_t<std::is_const_v<Self>, const T, T>;
    for (std::size_t i = 0; i < self.worker_count_; ++i) {
      WorkerSlot& slot = self.workers_[i];
      if (slot.used) std::invoke(f, static_cast<Value&>(slot.value));
    }
    for (OtherSlot* s = self.others_.load(std::memory_order_acquire); s != nullptr; s = s->next)
      std::invoke(f, static_cast<Value&>(s->value));
  }

  const void* key_;  // how the pool's workers name it (this_worker_index(), below)
  std::size_t worker_count_;
  std::unique_ptr<WorkerSlot[]> workers_;
  std::unique_ptr<const Maker> init_;  // null: value-initialise
  std::atomic<OtherSlot*> others_{nullptr};
};

}  // namespace wslab
