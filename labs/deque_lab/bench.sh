#!/usr/bin/env bash
# scripts/bench.sh for the deque exercise: builds lab_bench in grade.sh's Release directory, where
# stage4_chase_lev:student_deque is registered, and runs it. Every argument goes to lab_bench, e.g.
#   bash labs/deque_lab/bench.sh -w fib -t 1,2 -p stage4_chase_lev,stage4_chase_lev:student_deque
# Grade first (bash labs/deque_lab/grade.sh): lab_bench marks a pool that loses or repeats a task
# as FAILED, but a deque that passes the tests is the one worth measuring.
# WSLAB_DEQUE_LAB_BUILD=<dir> picks another build directory, as for grade.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/deps.sh

build=${WSLAB_DEQUE_LAB_BUILD:-build/deque-lab}
echo "== deque lab: release build of the harness in ${build}" >&2
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=g++ -DWSLAB_DEQUE_LAB=ON \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target lab_bench
exec "$build/harness/lab_bench" "$@"
