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
#   bash scripts/fork_instructions.sh --events [...]     # also loads, stores, conditional branches
#                                                         # and those callgrind's model mispredicts
# --events counts with callgrind's cache and branch simulation (--cache-sim=yes --branch-sim=yes):
# its loads and stores are the program's, its mispredictions those of a simple model of a
# predictor, not of the CPU's; they show where a path's branches depend on data.
set -euo pipefail
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
events=
if [[ ${1:-} == --events ]]; then
  events=yes
  shift
fi
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
# The calling thread's counts for fib($2) the way $1: its instructions, or with --events its
# instructions, loads, stores, conditional branches and mispredicted ones.
count() {
  valgrind --tool=callgrind --separate-threads=yes --toggle-collect='*fib_the_way*' \
    ${events:+--cache-sim=yes --branch-sim=yes} \
    --callgrind-out-file="$out/cg.$1.$2" "$program" "$1" "$2" > /dev/null 2>&1
  awk -v events="$events" '
    /^events:/ { for (i = 2; i <= NF; ++i) column[$i] = i }
    /^(summary|totals):/ {
      if (events) print $column["Ir"], $column["Dr"], $column["Dw"], $column["Bc"], $column["Bcm"]
      else print $2
      exit
    }' "$out/cg.$1.$2-01"
}
forks=92736  # fib(26) - fib(23): the calls with n >= 2 of fib(25), less those of fib(22)
if [[ -n $events ]]; then
  printf '%-18s %12s %6s %7s %9s %13s\n' "" instructions loads stores branches mispredicted
fi
for how in join join_ref_captures worker_ref worker_ref_stack co_join task_group call; do
  small=$(count "$how" 22)
  large=$(count "$how" 25)
  if [[ -n $events ]]; then
    awk -v how="$how" -v s="$small" -v l="$large" -v f="$forks" 'BEGIN {
      split(s, a, " "); split(l, b, " ")
      printf "%-18s %12.1f %6.1f %7.1f %9.1f %13.2f per %s\n", how, (b[1] - a[1]) / f,
             (b[2] - a[2]) / f, (b[3] - a[3]) / f, (b[4] - a[4]) / f, (b[5] - a[5]) / f,
             how == "call" ? "step with n >= 2" : "fork" }'
  else
    awk -v how="$how" -v s="$small" -v l="$large" -v f="$forks" \
      'BEGIN { printf "%-18s %6.1f instructions per %s\n", how, (l - s) / f,
               how == "call" ? "step with n >= 2" : "fork" }'
  fi
done
