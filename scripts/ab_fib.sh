#!/usr/bin/env bash
# fib(30) by pool.join (or a TaskGroup's rounds) from two revisions of the library, in one
# process: each revision is compiled (g++ -O2) with `wslab` renamed, so that both live in one
# program (harness/micro/ab_fib_side.cpp, ab_fib_main.cpp), which alternates them pool by pool and
# reports the median ratio of the pairs. A host whose speed drifts (a shared cloud machine)
# moves both halves of a pair alike, where separate processes of each build would not separate.
# On one thread the program pins itself to one CPU, so that both halves of a pair run on the same
# one (a virtual machine's CPUs can differ in speed: harness/cpu_speeds).
# The program is linked twice, the two builds' code in either order, and both run: where a
# function lands can move a fork's time by a quarter on some CPUs (stage 5's README, Step 29),
# so a difference that holds in only one link order is the layout's, not the change's.
#
#   bash scripts/ab_fib.sh REV_A [REV_B] [THREADS=1] [PAIRS=40] [FORK=join]
#
# REV_B empty or omitted: the working tree. Run from the repository's root, while nothing else
# runs. Example: the step before the newest commit against it, on two threads:
#   bash scripts/ab_fib.sh HEAD~1 HEAD 2
# AB_FLAGS_B, if set, adds compiler flags to build b alone: the same revision twice then measures
# a flag, e.g. the internal checks: AB_FLAGS_B=-DWSLAB_ASSERTIONS=1 bash scripts/ab_fib.sh HEAD HEAD
# FORK worker_ref times fib by WorkerRef::join (pool.with_worker) instead of pool.join; FORK group
# times 1,000 rounds of a TaskGroup of 1,000 empty callables on one of the pool's workers, in ns
# per callable (the shape of the spawn-and-sync loops that Lace and oneTBB are timed with).
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: bash scripts/ab_fib.sh REV_A [REV_B] [THREADS] [PAIRS] [FORK]" >&2; exit 2; }
rev_a=$1
rev_b=${2:-}
threads=${3:-1}
pairs=${4:-40}
fork=${5:-join}
case $fork in
  join) fork_flags=() fork_name=pool.join ;;
  worker_ref) fork_flags=(-DAB_WORKER_REF) fork_name=WorkerRef::join ;;
  group) fork_flags=(-DAB_GROUP) fork_name=TaskGroup ;;
  *) echo "ab_fib.sh: FORK is join, worker_ref or group" >&2; exit 2 ;;
esac
n=30
[[ $fork != group ]] || n=1000  # rounds of 1,000 callables
out=$(mktemp -d)
cleanup() {
  git worktree remove --force "$out/a" 2> /dev/null || true
  [[ -z $rev_b ]] || git worktree remove --force "$out/b" 2> /dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT
git worktree add --detach -q "$out/a" "$rev_a"
tree_b=$PWD
if [[ -n $rev_b ]]; then
  git worktree add --detach -q "$out/b" "$rev_b"
  tree_b=$out/b
fi
build() {  # $1: a or b, $2: the tree, then extra flags
  g++ -O2 -std=c++20 -pthread -I"$2" -Dwslab="wslab_ab_$1" -DAB_SIDE="$1" "${fork_flags[@]}" \
    "${@:3}" -c harness/micro/ab_fib_side.cpp -o "$out/$1.o"
}
read -r -a flags_b <<< "${AB_FLAGS_B:-}"
build a "$out/a" &
build b "$tree_b" "${flags_b[@]}"
wait
g++ -O2 -std=c++20 harness/micro/ab_fib_main.cpp "$out/a.o" "$out/b.o" -pthread -o "$out/ab_fib"
g++ -O2 -std=c++20 harness/micro/ab_fib_main.cpp "$out/b.o" "$out/a.o" -pthread \
  -o "$out/ab_fib_swapped"
cpu=$(lscpu | sed -n 's/^Model name: *//p; s/^CPU family: *\(.*\)/family \1/p; s/^Model: *\(.*\)/model \1/p')
echo "a = $rev_a, b = ${rev_b:-the working tree}${AB_FLAGS_B:+ with $AB_FLAGS_B}; $(echo $cpu), $(nproc) CPUs"
echo "linked a, b:"
"$out/ab_fib" "$threads" "$pairs" "$n" 3 "$fork_name"
echo "linked b, a:"
"$out/ab_fib_swapped" "$threads" "$pairs" "$n" 3 "$fork_name"
