#!/usr/bin/env bash
# Instructions per task group of k empty callables (k = 0, 1, 2, 4, 8), made, run() and waited for
# on a one-worker scheduler where nobody steals: with Step 28's group frames (the default), with
# Step 17's group jobs instead (no_group_frames), and with neither (no_group_jobs: task nodes),
# each from the guest seat; then with group frames on the pool's worker (on_worker), as a
# program's tasks make groups, where each push's wake-up check takes fewer tests. Counted by
# callgrind on the thread that runs the measured loop, inside it only
# (harness/micro/group_instructions.cpp): the difference between 20,000 and 10,000 rounds, over
# 10,000, so that startup and teardown cancel. "per callable" is the difference between k = 8
# and k = 4, over 4. A second table takes rounds of 32 and 64 on the worker (4,000 against 2,000
# rounds), long enough for Step 34's runs of one frame function, with the step and without it
# (on_worker_no_runs). Instruction counts do not depend on the machine's load.
#
#   bash scripts/group_instructions.sh [build/release]
set -euo pipefail
build=${1:-build/release}
program="$build/harness/group_instructions"
[[ -x $program ]] || { echo "group_instructions.sh: build $program first" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
count() {  # the measuring thread's instructions for $2 rounds of groups of $1 ($3: knob)
  local file="$out/cg.$1.$2.${3:-frames}"
  valgrind --tool=callgrind --separate-threads=yes --toggle-collect='*measured_rounds*' \
    --callgrind-out-file="$file" "$program" "$1" "$2" ${3:+"$3"} > /dev/null 2>&1
  # One thread counted, the one that ran measured_rounds(); the others' files total 0. Each file
  # states its total twice (summary, totals): the first of each is summed.
  awk '/^(summary|totals):/ { sum += $2; nextfile } END { print sum + 0 }' "$file"-*
}
printf '%-15s %8s %8s %8s %8s %8s %13s\n' "" "k = 0" "k = 1" "k = 2" "k = 4" "k = 8" "per callable"
for knob in "" no_group_frames no_group_jobs on_worker; do
  row=()
  for k in 0 1 2 4 8; do
    small=$(count "$k" 10000 "$knob")
    large=$(count "$k" 20000 "$knob")
    row+=("$(( (large - small) / 10000 ))")
  done
  name=${knob:-group frames}
  [[ $knob != on_worker ]] || name="frames, worker"
  printf '%-15s %8s %8s %8s %8s %8s %13s\n' "$name" "${row[@]}" \
    "$(( (row[4] - row[3]) / 4 ))"
done
# Rounds long enough for a run of one frame function (README.md, step 'Runs of one frame
# function'), on the worker, with the step and without it: per callable, k = 64 against k = 32.
printf '\n%-15s %8s %8s %13s\n' "" "k = 32" "k = 64" "per callable"
for knob in on_worker on_worker_no_runs; do
  row=()
  for k in 32 64; do
    small=$(count "$k" 2000 "$knob")
    large=$(count "$k" 4000 "$knob")
    row+=("$(( (large - small) / 2000 ))")
  done
  name="frame runs"
  [[ $knob != on_worker_no_runs ]] || name="no_frame_runs"
  printf '%-15s %8s %8s %13s\n' "$name" "${row[@]}" "$(( (row[1] - row[0]) / 32 ))"
done
