#!/usr/bin/env bash
# The deque exercise's model check (README.md here, "Read the counterexample"): builds
# model_check_test.cpp on your deque (student_deque.hpp) in the grader's build directory and runs
# it. It explores every execution of an owner against one and two thieves on a ring of two slots
# within its bounds, under the C++ memory model, and prints the first execution that loses,
# doubles or invents a task, step by step.
#   bash labs/deque_lab/model_check.sh                      # both scenarios
#   bash labs/deque_lab/model_check.sh --gtest_filter='*OwnerAndThief'
# WSLAB_DEQUE_LAB_BUILD=<dir> picks another build directory (default build/deque-lab).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/deps.sh

build=${WSLAB_DEQUE_LAB_BUILD:-build/deque-lab}
echo "== deque lab: building the model check of labs/deque_lab/student_deque.hpp in ${build}" >&2
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=g++ -DWSLAB_DEQUE_LAB=ON \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target deque_lab_model_check
"$build/labs/deque_lab/deque_lab_model_check" "$@"
