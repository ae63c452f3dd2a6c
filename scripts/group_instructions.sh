#!/usr/bin/env bash
# Instructions per task group of k empty callables (k = 0, 1, 2, 4, 8), made, run() and waited for
# on a one-worker scheduler where nobody steals: with Step 28's group frames (the default), with
# Step 17's group jobs instead (no_group_frames), and with neither (no_group_jobs: task nodes),
# counted by callgrind on the calling thread inside the measured loop only
# (harness/micro/group_instructions.cpp): the difference between 20,000 and 10,000 rounds, over
# 10,000, so that startup and teardown cancel. "per callable" is the difference between k = 8
# and k = 4, over 4. Instruction counts do not depend on the machine's load.
#
#   bash scripts/group_instructions.sh [build/release]
set -euo pipefail
build=${1:-build/release}
program="$build/harness/group_instructions"
[[ -x $program ]] || { echo "group_instructions.sh: build $program first" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
count() {  # the calling thread's instructions for $2 rounds of groups of $1 ($3: knob)
  valgrind --tool=callgrind --separate-threads=yes --toggle-collect='*measured_rounds*' \
    --callgrind-out-file="$out/cg.$1.$2" "$program" "$1" "$2" ${3:+"$3"} > /dev/null 2>&1
  awk '/^(summary|totals):/ { print $2; exit }' "$out/cg.$1.$2-01"
}
printf '%-15s %8s %8s %8s %8s %8s %13s\n' "" "k = 0" "k = 1" "k = 2" "k = 4" "k = 8" "per callable"
for knob in "" no_group_frames no_group_jobs; do
  row=()
  for k in 0 1 2 4 8; do
    small=$(count "$k" 10000 "$knob")
    large=$(count "$k" 20000 "$knob")
    row+=("$(( (large - small) / 10000 ))")
  done
  printf '%-15s %8s %8s %8s %8s %8s %13s\n' "${knob:-group frames}" "${row[@]}" \
    "$(( (row[4] - row[3]) / 4 ))"
done
