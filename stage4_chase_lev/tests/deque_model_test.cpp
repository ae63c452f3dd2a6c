// Stage 4's deque under the model checker (../../tests/model_check/model_checker.hpp): the shipped
// code, with its atomics policy set to the checker's, runs an owner against one or two thieves on a
// ring of two slots, so that slots are reused and the ring grows (tests/deque_model_scenarios.hpp),
// in every execution within the bounds. The shipped orderings never lose, double or invent a task
// there; each weakening of the lab's table (labs/README.md, "Which tool catches which mistake"),
// and a few more, gives a counterexample, printed as the execution that shows it.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "stage4_chase_lev/chase_lev_deque.hpp"
#include "tests/deque_model_scenarios.hpp"
#include "tests/model_check/model_atomics.hpp"

namespace {

namespace model = wslab::model;
using wslab::test::model_owner_and_thief;
using wslab::test::model_owner_and_two_thieves;
using A = model::Access;
constexpr std::memory_order kRelaxed = std::memory_order_relaxed;

template <class Fences>
using ModelDeque = wslab::ChaseLevDeque<int, Fences, false, model::ModelAtomics>;
using Shipped = ModelDeque<wslab::LeFences>;

void expect_no_counterexample(const model::Result& r) {
  EXPECT_FALSE(r.failed) << r.message << "\n" << r.trace;
  EXPECT_TRUE(r.exhaustive) << r.summary();
  EXPECT_EQ(r.step_bounded, 0u) << r.summary();
  std::printf("%s\n", r.summary().c_str());
}

void expect_counterexample(const model::Result& r, const char* what) {
  ASSERT_TRUE(r.failed) << r.summary();
  EXPECT_NE(r.message.find(what), std::string::npos) << r.message << "\n" << r.trace;
  std::printf("%s\n  %s\n", r.summary().c_str(), r.message.c_str());
  std::printf("%s\n", r.trace.c_str());
}

TEST(ChaseLevDequeModel, ShippedOrderingsOwnerAndThief) {
  expect_no_counterexample(model_owner_and_thief<Shipped>());
}

TEST(ChaseLevDequeModel, ShippedOrderingsOwnerAndTwoThieves) {
  expect_no_counterexample(model_owner_and_two_thieves<Shipped>());
}

// The lab's table, row 1: push() without its release fence (the NoPushRelease policy). A thief
// reads the new bottom but an old slot: the ring's initial 0, a task never pushed.
TEST(ChaseLevDequeModel, NoPushReleaseTakesAnUnpublishedSlot) {
  expect_counterexample(model_owner_and_thief<ModelDeque<wslab::NoPushRelease>>(), "never pushed");
}

// Row 2: pop() without its seq_cst fence (NoPopFence). Store buffering: the owner reads top from
// before a steal and a thief reads bottom from before the pop; both take task 2.
TEST(ChaseLevDequeModel, NoPopFenceTakesATaskTwice) {
  expect_counterexample(model_owner_and_two_thieves<ModelDeque<wslab::NoPopFence>>(),
                        "taken twice");
}

// Row 3: the steal's CAS relaxed. The owner's acquire load of top no longer synchronises with
// it, so the thief's earlier read of the slot may take its value from the owner's later
// overwrite of that slot (load buffering): task 3 twice, task 1 lost. x86 never reorders a load
// after a later store, and ThreadSanitizer does not simulate weak memory.
TEST(ChaseLevDequeModel, RelaxedStealCasTakesATaskTwice) {
  expect_counterexample(model_owner_and_thief<Shipped>({{"steal", A::rmw, kRelaxed}}),
                        "taken twice");
}

// Beyond the table: the other half of the same pair, push()'s acquire load of top made relaxed.
TEST(ChaseLevDequeModel, RelaxedPushTopLoadTakesATaskTwice) {
  expect_counterexample(model_owner_and_thief<Shipped>({{"push", A::load, kRelaxed}}),
                        "taken twice");
}

// Beyond the table: steal() without its seq_cst fence, the thief's half of the pair in pop():
// two thieves and the owner, and one task taken twice. The stress tests do not catch this on
// x86 (a load is never reordered with an earlier load there).
TEST(ChaseLevDequeModel, NoStealFenceTakesATaskTwice) {
  expect_counterexample(model_owner_and_two_thieves<Shipped>({{"steal", A::fence, kRelaxed}}),
                        "taken twice");
}

// Beyond the table: steal()'s loads all relaxed (its acquire on bottom pairs with push()'s
// release fence).
TEST(ChaseLevDequeModel, RelaxedStealLoadsTakeAnUnpublishedSlot) {
  expect_counterexample(model_owner_and_thief<Shipped>({{"steal", A::load, kRelaxed}}),
                        "never pushed");
}

}  // namespace
