// The pool of the deque exercise: stage 4's pool, unchanged, with the student's deque
// (student_deque.hpp) in place of stage 4's. registry/pools.cpp registers it when CMake's
// WSLAB_DEQUE_LAB is on, so that the conformance suite and the harness run it like any other
// pool; off, the unfinished skeleton would fail the suite.
//
// Its name follows the registry's rule for a stage with one thing changed, "<stage>:<what
// differs>": the pool is stage 4's own object and reports stage 4's name(), so a name under
// labs: would take a forwarding shell, a second pool object that the identity checks
// (owns_current_thread(), a running task's pool) would not recognise as the first.
#pragma once

#include <string_view>

#include "../../stage4_chase_lev/chase_lev_pool.hpp"
#include "student_deque.hpp"

namespace wslab::labs::deque_lab {

using StudentDequePool = BasicChaseLevPool<ChaseLevLayout{}, StudentDeque<chase_lev::TaskNode*>>;

inline constexpr std::string_view kStudentDequePoolName = "stage4_chase_lev:student_deque";

}  // namespace wslab::labs::deque_lab
