#!/usr/bin/env bash
# Instructions per fork of fib by pool.join (its halves capturing n by value, and,
# join_ref_captures, by reference), by WorkerRef::join (its frames in the deque's slots,
# and, worker_ref_stack, in the joining stack), by co_join of two CoTasks and by a TaskGroup of
# two callables, beside one step of the sequential fib, counted by callgrind on the calling
# thread inside the measured call only (harness/micro/fork_instructions.cpp):
# the difference between fib(25) and fib(22), over the 92,736 forks between them, so that startup
# and teardown cancel. Instruction counts do not depend on the machine's load.
#
#   bash scripts/fork_instructions.sh [build/release]
#   bash scripts/fork_instructions.sh --cxx clang++-14   # the probe alone, built with that compiler
#                                                         # (-O3 -DNDEBUG, as Release builds it)
set -euo pipefail
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if [[ ${1:-} == --cxx ]]; then
  [[ -n ${2:-} ]] || { echo "fork_instructions.sh: --cxx needs a compiler" >&2; exit 2; }
  root=$(cd "$(dirname "$0")/.." && pwd)
  program="$out/fork_instructions"
  "$2" -O3 -DNDEBUG -std=c++20 -pthread -I"$root" "$root/harness/micro/fork_instructions.cpp" \
    -o "$program"
else
  build=${1:-build/release}
  program="$build/harness/fork_instructions"
  [[ -x $program ]] || { echo "fork_instructions.sh: build $program first" >&2; exit 1; }
fi
count() {  # the calling thread's instructions for fib($2) the way $1
  valgrind --tool=callgrind --separate-threads=yes --toggle-collect='*fib_the_way*' \
    --callgrind-out-file="$out/cg.$1.$2" "$program" "$1" "$2" > /dev/null 2>&1
  awk '/^(summary|totals):/ { print $2; exit }' "$out/cg.$1.$2-01"
}
forks=92736  # fib(26) - fib(23): the calls with n >= 2 of fib(25), less those of fib(22)
for how in join join_ref_captures worker_ref worker_ref_stack co_join task_group call; do
  small=$(count "$how" 22)
  large=$(count "$how" 25)
  awk -v how="$how" -v s="$small" -v l="$large" -v f="$forks" \
    'BEGIN { printf "%-18s %6.1f instructions per %s\n", how, (l - s) / f,
             how == "call" ? "step with n >= 2" : "fork" }'
done
