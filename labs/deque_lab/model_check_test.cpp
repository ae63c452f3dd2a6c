// The deque exercise under the model checker (README.md here, "Read the counterexample"): the
// owner-and-thieves scenarios of tests/deque_model_scenarios.hpp on the student's deque, with
// the checker's atomics in place of std::atomic. A failure prints the execution that shows it:
// per step, the thread, the line of student_deque.hpp, the access and its ordering, and which
// store each load read. Built against the student's deque (model_check.sh, WSLAB_DEQUE_LAB=ON),
// or, in the default build, against the skeleton as shipped, which must fail.
#include <gtest/gtest.h>

#include <cstdio>

#include "labs/deque_lab/student_deque.hpp"
#include "tests/deque_model_scenarios.hpp"
#include "tests/model_check/model_atomics.hpp"

namespace {

namespace model = wslab::model;
using Deque = wslab::labs::deque_lab::StudentDeque<int, model::ModelAtomics>;

void report(const model::Result& r) {
  std::printf("%s\n", r.summary().c_str());
  if (r.failed) std::printf("%s\n%s\n", r.message.c_str(), r.trace.c_str());
  EXPECT_FALSE(r.failed) << r.message;
}

TEST(DequeLabModel, OwnerAndThief) {
  report(wslab::test::model_owner_and_thief<Deque>());
}

TEST(DequeLabModel, OwnerAndTwoThieves) {
  report(wslab::test::model_owner_and_two_thieves<Deque>());
}

}  // namespace
