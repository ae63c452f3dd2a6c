#!/usr/bin/env bash
# Before the lab (labs/README.md, "Before the lab"): installs what is missing and builds only what
# the exercises run, then checks in seconds that the harness works and whether the CPUs run at
# the same speed. Under five minutes on two cores from a fresh clone with the packages installed;
# `bash scripts/test.sh` (every test) is not needed for the lab.
#   bash scripts/prelab.sh            # Release programs + the one ThreadSanitizer test of Exercise 7
#   bash scripts/prelab.sh --no-tsan  # without the TSan build (Exercise 7 then builds it itself)
set -euo pipefail
cd "$(dirname "$0")/.."
tsan=1
if [ "${1:-}" = "--no-tsan" ]; then tsan=0; shift; fi
[ $# -eq 0 ] || { echo "usage: bash scripts/prelab.sh [--no-tsan]" >&2; exit 2; }
bash scripts/deps.sh build bench

# Every program a command of labs/README.md runs, in Release.
targets=(lab_bench false_sharing_micro stage4_micro_bench stage4_pool_test conformance_test
         stage5_algos_bench mandelbrot one_cpu_per_thread_test trace_demo stage4_model_check_test
         model_check_litmus_test cpu_speeds)
echo "== wslab pre-lab: release build of ${targets[*]}" >&2
cmake --preset release >/dev/null
cmake --build --preset release --target "${targets[@]}"
if [ "$tsan" = 1 ]; then
  echo "== wslab pre-lab: ThreadSanitizer build of Exercise 7's test" >&2
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan --target stage4_weakened_deque_is_caught
fi

echo "== wslab pre-lab: a few seconds of every stage and oneTBB, results verified" >&2
build/release/harness/lab_bench --quick -w grid,fib -t 1,2 -p pools,tbb --no-plots -o /tmp/wslab-prelab
echo "== wslab pre-lab: the CPUs' speeds (labs/README.md, 'CPUs of different speeds')" >&2
build/release/harness/cpu_speeds
echo "== wslab pre-lab: ready" >&2
