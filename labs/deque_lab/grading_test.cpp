// The grading tests of the deque exercise (README.md in this folder): stage 4's single-threaded
// deque checks (tests/deque_checks.hpp), its owner + thieves stress tests (tests/deque_stress.hpp),
// and a thief reading what the owner wrote before each push. One source, built three ways
// (CMakeLists.txt here): on stage 4's deque, the reference, which must pass; on the skeleton as
// it is in the repository, which must fail; and on the student's deque (grade.sh).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <thread>
#include <vector>

#include "common/config.hpp"
#include "tests/deque_checks.hpp"
#include "tests/deque_stress.hpp"

#ifdef WSLAB_DEQUE_LAB_REFERENCE
#include "stage4_chase_lev/chase_lev_deque.hpp"
template <class T>
using GradedDeque = wslab::ChaseLevDeque<T>;
constexpr const char* kGraded = "stage 4's ChaseLevDeque (the reference solution)";
#else
#include "labs/deque_lab/student_pool.hpp"
template <class T>
using GradedDeque = wslab::labs::deque_lab::StudentDeque<T>;
constexpr const char* kGraded = "labs/deque_lab/student_deque.hpp";
// Stage 4's pool on this deque must compile even while the registry leaves it out.
template class wslab::BasicChaseLevPool<wslab::ChaseLevLayout{},
                                        GradedDeque<wslab::chase_lev::TaskNode*>>;
#endif

namespace {

using Deque = GradedDeque<std::uintptr_t>;
using wslab::StealOutcome;
using wslab::test::owner_and_thieves;

class Announce : public ::testing::Environment {
  void SetUp() override { std::printf("Grading %s\n", kGraded); }
};
[[maybe_unused]] ::testing::Environment* const kAnnounce =
    ::testing::AddGlobalTestEnvironment(new Announce);

// Before any thread starts: an operation that throws (not written yet) or gets one item wrong
// fails here, in the test's own thread, instead of terminating a thief thread.
template <class D, class Item>
::testing::AssertionResult works_alone(Item one, Item two) {
  try {
    D d(2);
    d.push(one);
    if (d.pop() != std::optional<Item>(one)) {
      return ::testing::AssertionFailure() << "push(x) then pop() did not give x";
    }
    d.push(two);
    const auto s = d.steal();
    if (s.outcome != StealOutcome::success || s.item != two) {
      return ::testing::AssertionFailure() << "push(x) then steal() did not give x";
    }
    if (d.pop().has_value()) return ::testing::AssertionFailure() << "pop() on an empty deque";
    if (d.steal().outcome != StealOutcome::empty) {
      return ::testing::AssertionFailure() << "steal() on an empty deque did not say empty";
    }
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << e.what();
  }
  return ::testing::AssertionSuccess();
}

TEST(DequeBasics, EmptyDequeGivesNothing) {
  wslab::test::check_empty_deque_gives_nothing<Deque>();
}
TEST(DequeBasics, OwnerIsLifoThiefIsFifo) {
  wslab::test::check_owner_lifo_thief_fifo<Deque>();
}
TEST(DequeGrowth, ManySizesFromCapacityTwo) {
  wslab::test::check_growth_from_capacity_two<Deque>();
}
TEST(DequeGrowth, GrowsWhileWrappedAround) {
  wslab::test::check_growth_while_wrapped<Deque>();
}
TEST(DequeDifferential, RandomOperationsMatchAStdDeque) {
  wslab::test::check_random_operations_against_std_deque<Deque>();
}

constexpr std::uintptr_t kStressItems = wslab::kSanitized ? 300'000 : 10'000'000;

TEST(DequeStress, OwnerAndOneThiefMoveEveryItemExactlyOnce) {
  ASSERT_TRUE((works_alone<Deque, std::uintptr_t>(1, 2)));
  Deque d(256);
  owner_and_thieves(d, 1, kStressItems);
}

TEST(DequeStress, OwnerAndThreeThievesMoveEveryItemExactlyOnce) {
  ASSERT_TRUE((works_alone<Deque, std::uintptr_t>(1, 2)));
  Deque d(256);
  owner_and_thieves(d, 3, kStressItems);
}

// A fresh deque at capacity 2 every 10,000 items, bursts up to 1,024: the ring grows while
// thieves read it.
TEST(DequeStress, GrowthRacesSteals) {
  ASSERT_TRUE((works_alone<Deque, std::uintptr_t>(1, 2)));
  constexpr std::uintptr_t kPerRound = 10'000;
  for (std::uintptr_t moved = 0; moved < kStressItems; moved += kPerRound) {
    Deque d(2);
    owner_and_thieves(d, 2, kPerRound, 1024);
    if (HasFailure()) break;
  }
}

// The owner writes each payload, then pushes its address; whoever takes it must read what was
// written. Under ThreadSanitizer an ordering missing between the write and the thief's read is
// reported as a data race on `value`; on x86 hardware it shows only if the compiler reorders.
struct Payload {
  std::uint64_t value = 0;  // plain, not atomic: the deque's orderings must publish it
};

TEST(DequeStress, AThiefSeesWhatTheOwnerWroteBeforePushing) {
  static Payload probe_items[2];
  ASSERT_TRUE((works_alone<GradedDeque<Payload*>, Payload*>(&probe_items[0], &probe_items[1])));
  constexpr std::size_t kItems = wslab::kSanitized ? 50'000 : 1'000'000;
  std::vector<Payload> payloads(kItems);
  GradedDeque<Payload*> d(64);
  std::atomic<bool> owner_done{false};
  std::atomic<std::uint64_t> wrong{0};
  auto check = [&](const Payload* p) {
    const auto index = static_cast<std::uint64_t>(p - payloads.data());
    if (p->value != index + 1) wrong.fetch_add(1, std::memory_order_relaxed);
  };
  std::thread thief([&] {
    for (;;) {
      const auto r = d.steal();
      if (r.outcome == StealOutcome::success) {
        check(r.item);
      } else if (r.outcome == StealOutcome::empty && owner_done.load(std::memory_order_acquire)) {
        return;
      }
    }
  });
  for (std::size_t i = 0; i < kItems; ++i) {
    payloads[i].value = i + 1;
    d.push(&payloads[i]);
    if (i % 3 == 0) {  // the owner takes some back, so pops of the last item race steals
      if (auto mine = d.pop()) check(*mine);
    }
  }
  while (auto mine = d.pop())
    check(*mine);
  owner_done.store(true, std::memory_order_release);
  thief.join();
  EXPECT_EQ(wrong.load(), 0u) << "an item came out before what the owner wrote was visible";
}

}  // namespace
