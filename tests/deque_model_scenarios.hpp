// Owner-and-thieves scenarios for the model checker (model_check/model_checker.hpp), as function
// templates on the deque type, so that one set serves stage 4's deque
// (stage4_chase_lev/tests/deque_model_test.cpp) and the deque exercise's
// (labs/deque_lab/model_check_test.cpp). The deque must hold int and run on model::ModelAtomics.
// Each scenario returns the checker's result: a failed check names the task taken twice, lost or
// invented, and what each thread took.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stage4_chase_lev/chase_lev_deque.hpp"
#include "tests/model_check/model_atomics.hpp"

namespace wslab::test {

// The locations in the order a deque with stage 4's members creates them: top, bottom, the
// buffer pointer, then the ring (two slots), then a grown ring.
inline const std::vector<std::string> kDequeLocationNames = {"top",      "bottom",   "buffer",
                                                             "ring[0]",  "ring[1]",  "grown[0]",
                                                             "grown[1]", "grown[2]", "grown[3]"};

// Every interleaving with up to two preemptions, every store each load may read, and one load
// that reads a later store (load buffering) per execution.
inline model::Options deque_model_options(std::vector<model::Weakening> weaken = {}) {
  model::Options o;
  o.preemption_bound = 2;
  o.speculation_bound = 1;
  o.weaken = std::move(weaken);
  o.location_names = kDequeLocationNames;
  return o;
}

// Every task 1..tasks was taken exactly once; took[i] is what thread i+1 took.
inline void check_exactly_once(int tasks, const std::vector<std::vector<int>>& took) {
  std::vector<int> times(static_cast<std::size_t>(tasks) + 1, 0);
  bool invented = false;
  for (const std::vector<int>& t : took)
    for (int v : t) {
      if (v >= 1 && v <= tasks)
        ++times[static_cast<std::size_t>(v)];
      else
        invented = true;
    }
  std::string problem;
  if (invented) problem = "a task that was never pushed was taken";
  for (int v = 1; v <= tasks && problem.empty(); ++v)
    if (times[static_cast<std::size_t>(v)] > 1) problem = "a task was taken twice";
  for (int v = 1; v <= tasks && problem.empty(); ++v)
    if (times[static_cast<std::size_t>(v)] == 0) problem = "a task was lost";
  if (problem.empty()) return;
  problem += " (";
  for (std::size_t i = 0; i < took.size(); ++i) {
    problem += i == 0 ? "T" : "; T";
    problem += std::to_string(i + 1);
    problem += " took";
    for (int v : took[i]) {
      problem += ' ';
      problem += std::to_string(v);
    }
  }
  problem += ')';
  model::check(false, problem);
}

// The owner (T1) pushes 1, 2, 3 into a ring of two and pops until it is empty; the thief (T2)
// steals twice. The third push reuses the slot of task 1 if the thief has taken it, and grows
// the ring otherwise.
template <class Deque>
model::Result model_owner_and_thief(std::vector<model::Weakening> weaken = {}) {
  return model::explore(deque_model_options(std::move(weaken)), [] {
    Deque deque(2);
    std::vector<std::vector<int>> took(2);
    const int owner = model::spawn([&] {
      for (int v = 1; v <= 3; ++v)
        deque.push(v);
      while (std::optional<int> v = deque.pop())
        took[0].push_back(*v);
    });
    const int thief = model::spawn([&] {
      for (int i = 0; i < 2; ++i) {
        const StealResult<int> r = deque.steal();
        if (r.outcome == StealOutcome::success) took[1].push_back(r.item);
      }
    });
    model::join(owner);
    model::join(thief);
    check_exactly_once(3, took);
  });
}

// The owner (T1) pushes 1 and 2 and pops twice, against two thieves (T2, T3) that steal once
// each: the last task is fought over by all three.
template <class Deque>
model::Result model_owner_and_two_thieves(std::vector<model::Weakening> weaken = {}) {
  return model::explore(deque_model_options(std::move(weaken)), [] {
    Deque deque(2);
    std::vector<std::vector<int>> took(3);
    const int owner = model::spawn([&] {
      deque.push(1);
      deque.push(2);
      for (int i = 0; i < 2; ++i)
        if (std::optional<int> v = deque.pop()) took[0].push_back(*v);
    });
    int thieves[2];
    for (int t = 0; t < 2; ++t)
      thieves[t] = model::spawn([&, t] {
        const StealResult<int> r = deque.steal();
        if (r.outcome == StealOutcome::success)
          took[static_cast<std::size_t>(t) + 1].push_back(r.item);
      });
    model::join(owner);
    model::join(thieves[0]);
    model::join(thieves[1]);
    check_exactly_once(2, took);
  });
}

}  // namespace wslab::test
