#!/usr/bin/env bash
# Lace's instructions per fork of fib and per spawned task, counted as scripts/fork_instructions.sh
# and scripts/group_instructions.sh count wslab's (harness/micro/lace_instructions.cpp): by
# callgrind, on the Lace worker that runs the measured task, nobody stealing. Per fork: the
# difference between fib(25) and fib(22), over the 92,736 forks between them. Per task: rounds of
# k empty tasks spawned and then synced, the difference between k = 8 and k = 4 over 4, each the
# difference between 20,000 and 10,000 rounds over 10,000 (startup and teardown cancel).
# Compiled as the Lace project compiles itself apart from -march=native (lace.c with gcc as C11),
# and the probe with g++ -O3, as Release builds wslab's probes.
#
#   bash scripts/lace_instructions.sh LACE_SRC
#
# LACE_SRC: the folder with Lace v1.4.2's lace.c and lace.h (src/ of a checkout of
# github.com/trolando/lace at tag v1.4.2). Lace's CMake generates lace_config.h; where the folder
# has none, this script writes one with its defaults (no counters, no timers). Lace is measured
# here, never a dependency of wslab.
set -euo pipefail
[[ $# -eq 1 && -f $1/lace.c && -f $1/lace.h ]] || {
  echo "usage: bash scripts/lace_instructions.sh LACE_SRC (a folder with lace.c and lace.h)" >&2
  exit 2
}
lace=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
config=$lace
if [[ ! -f $lace/lace_config.h ]]; then
  config=$out
  printf '#define %s 0\n' LACE_PIE_TIMES LACE_COUNT_TASKS LACE_COUNT_STEALS LACE_COUNT_SPLITS \
    > "$out/lace_config.h"
fi
gcc -O3 -std=gnu11 -pthread -I"$lace" -I"$config" -c "$lace/lace.c" -o "$out/lace.o"
g++ -O3 -DNDEBUG -std=c++20 -pthread -I"$lace" -I"$config" \
  "$root/harness/micro/lace_instructions.cpp" "$out/lace.o" -o "$out/lace_instructions"
count() {  # the counted worker's instructions for the arguments given
  local file="$out/cg.${*// /.}"
  valgrind --tool=callgrind --separate-threads=yes --toggle-collect='measured_*_WRAP*' \
    --callgrind-out-file="$file" "$out/lace_instructions" "$@" > /dev/null 2>&1
  # One thread counted (the worker's file); the others' total 0. Each file states its total
  # twice (summary, totals): the first of each is summed.
  awk '/^(summary|totals):/ { sum += $2; nextfile } END { print sum + 0 }' "$file"-*
}
small=$(count fib 22)
large=$(count fib 25)
awk -v s="$small" -v l="$large" \
  'BEGIN { printf "fib by SPAWN, CALL, SYNC   %6.1f instructions per fork\n", (l - s) / 92736 }'
per_round() { echo $(( ($(count spawn "$1" 20000) - $(count spawn "$1" 10000)) / 10000 )); }
four=$(per_round 4)
eight=$(per_round 8)
echo "k = 4: $four, k = 8: $eight instructions per round of k SPAWNs and k SYNCs"
awk -v a="$four" -v b="$eight" \
  'BEGIN { printf "SPAWN and its SYNC         %6.1f instructions per task\n", (b - a) / 4 }'
