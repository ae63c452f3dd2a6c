// Stage 4's parking protocol (parking.hpp) under the model checker, with stage 4's deque as the
// place work is published: a worker pushes a task and calls notify_one(); a searching worker
// goes through the protocol with no spinning (announce, re-scan with a steal, park), as the pool
// does with spin_rounds = 0, until it has taken the task. A lost wake-up leaves the searcher
// asleep with the task in the deque: the checker reports it as a deadlock.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "stage4_chase_lev/chase_lev_deque.hpp"
#include "stage4_chase_lev/parking.hpp"
#include "tests/model_check/model_atomics.hpp"

namespace {

namespace model = wslab::model;
using Deque = wslab::ChaseLevDeque<int, wslab::LeFences, false, model::ModelAtomics>;
using Parking = wslab::chase_lev::BasicParking<model::ModelAtomics, model::FutexEpoch>;

// Locations in creation order: the deque's, then the parking's counts and epoch.
const std::vector<std::string> kNames = {"top",     "bottom", "buffer", "ring[0]",
                                         "ring[1]", "counts", "epoch"};

// A worker out of work until it has taken `want` tasks. `rescan` false is the lab's lost-wake-up
// mistake: no second look after announce().
void searcher(Deque& deque, Parking& parking, int want, bool rescan, std::vector<int>& took) {
  parking.begin_search();
  for (;;) {
    const Parking::Ticket ticket = parking.announce();
    const wslab::StealResult<int> r =
        rescan ? deque.steal() : wslab::StealResult<int>{wslab::StealOutcome::empty};
    if (r.outcome == wslab::StealOutcome::success) {
      parking.cancel_park();
      parking.found_work();
      took.push_back(r.item);
      if (static_cast<int>(took.size()) == want) return;
      parking.begin_search();
      continue;
    }
    parking.park(ticket);
  }
}

// One pusher, `sleepers` searchers that each want one task; the pusher publishes one task per
// searcher, each followed by notify_one().
model::Result publish_and_wake(int sleepers, bool rescan, std::vector<model::Weakening> weaken,
                               int preemption_bound = 2) {
  model::Options o;
  o.preemption_bound = preemption_bound;
  o.weaken = std::move(weaken);
  o.location_names = kNames;
  return model::explore(o, [=] {
    Deque deque(2);
    Parking parking;
    std::vector<int> took[3];
    const int pusher = model::spawn([&] {
      for (int v = 1; v <= sleepers; ++v) {
        deque.push(v);
        parking.notify_one();
      }
    });
    int ids[2];
    for (int i = 0; i < sleepers; ++i)
      ids[i] = model::spawn([&, i] { searcher(deque, parking, 1, rescan, took[i]); });
    model::join(pusher);
    for (int i = 0; i < sleepers; ++i)
      model::join(ids[i]);
    for (int i = 0; i < sleepers; ++i)
      model::check(took[i].size() == 1, "a searcher did not get its task");
  });
}

void expect_no_counterexample(const model::Result& r) {
  EXPECT_FALSE(r.failed) << r.message << "\n" << r.trace;
  EXPECT_TRUE(r.exhaustive) << r.summary();
  EXPECT_EQ(r.step_bounded, 0u) << r.summary();
  std::printf("%s\n", r.summary().c_str());
}

void expect_lost_wakeup(const model::Result& r) {
  ASSERT_TRUE(r.failed) << r.summary();
  EXPECT_NE(r.message.find("deadlock"), std::string::npos) << r.message << "\n" << r.trace;
  std::printf("%s: %s\n", r.summary().c_str(), r.message.c_str());
  std::printf("%s\n", r.trace.c_str());
}

TEST(ChaseLevParkingModel, ShippedProtocolOneSleeper) {
  expect_no_counterexample(publish_and_wake(1, true, {}));
}

// Two sleepers and a pusher: one preemption (10,352 executions; two preemptions make 411,933,
// too many for every CI run).
TEST(ChaseLevParkingModel, ShippedProtocolTwoSleepers) {
  expect_no_counterexample(publish_and_wake(2, true, {}, 1));
}

// The lab's table, last row: no re-scan after announce().
TEST(ChaseLevParkingModel, NoRescanLosesAWakeUp) {
  expect_lost_wakeup(publish_and_wake(1, false, {}));
}

// notify_one() without its seq_cst fence (issued in common/idle_counts.hpp's
// load_after_publishing()): the pusher may read the counts from before the searcher announced
// itself while the searcher's re-scan misses the push (store buffering).
TEST(ChaseLevParkingModel, NotifyWithoutFenceLosesAWakeUp) {
  expect_lost_wakeup(publish_and_wake(
      1, true, {{"load_after_publishing", model::Access::fence, std::memory_order_relaxed}}));
}

}  // namespace
