#!/usr/bin/env bash
# Grades the deque exercise (README.md here) with one command: configures a build directory of
# its own with WSLAB_DEQUE_LAB=ON, builds the grading tests on your deque and the conformance
# suite with stage 4's pool on your deque registered as stage4_chase_lev:student_deque, and runs
# both (ctest -L deque_lab).
#   bash labs/deque_lab/grade.sh            # Release, in build/deque-lab
#   bash labs/deque_lab/grade.sh tsan       # under ThreadSanitizer, in build/deque-lab-tsan
#   bash labs/deque_lab/grade.sh release -V # arguments after the mode go to ctest
# WSLAB_DEQUE_LAB_BUILD=<dir> picks another build directory.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/deps.sh

mode=release
if [ $# -gt 0 ] && [[ "$1" =~ ^(release|tsan)$ ]]; then
  mode=$1
  shift
fi
flags=(-G Ninja -DCMAKE_CXX_COMPILER=g++ -DWSLAB_DEQUE_LAB=ON)
if [ "$mode" = tsan ]; then
  build=${WSLAB_DEQUE_LAB_BUILD:-build/deque-lab-tsan}
  # As the tsan preset (CMakePresets.json); the harness is not needed there.
  flags+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DWSLAB_BUILD_HARNESS=OFF
    "-DCMAKE_CXX_FLAGS=-fsanitize=thread -fno-omit-frame-pointer"
    -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread)
  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
else
  build=${WSLAB_DEQUE_LAB_BUILD:-build/deque-lab}
  flags+=(-DCMAKE_BUILD_TYPE=Release)
fi

echo "== deque lab: ${mode} build of the grading tests in ${build}" >&2
cmake -S . -B "$build" "${flags[@]}" >/dev/null
cmake --build "$build" --target deque_lab_student conformance_test
echo "== deque lab: grading labs/deque_lab/student_deque.hpp" >&2
ctest --test-dir "$build" -L deque_lab --output-on-failure "$@"
