#!/usr/bin/env bash
# The lab's "which tool catches which mistake" table, one row at a time (labs/README.md): makes one
# mistake in a scratch copy of stage 4 under /tmp (the repository stays untouched), shows the
# change as a diff, builds the tests against the copy, runs them and says whether they caught it.
#   bash scripts/break_deque.sh pop-fence          # pop without its seq_cst fence: the stress tests catch it
#                                                  # (up to ten minutes; usually the first repetition)
#   bash scripts/break_deque.sh relaxed-steal-cas  # steal's CAS relaxed: nothing catches it on x86
#   bash scripts/break_deque.sh lost-wakeup        # no re-scan after announce(): the parking test hangs
# The exit status is 0 when the outcome is the one the table states (on x86-64; elsewhere the
# relaxed CAS may be caught, and the script only reports), 1 when it is not. Each row takes under
# a minute on two cores, mostly g++.
set -euo pipefail
cd "$(dirname "$0")/.."
mistake=${1:-}
repo=$PWD
scratch=/tmp/wslab-break-$mistake
say() { echo "== break_deque $mistake: $*" >&2; }
run() { echo "+ $*" >&2; "$@"; }

copy_sources() {
  rm -rf "$scratch" && mkdir -p "$scratch"
  cp -r common stage4_chase_lev tests "$scratch/"
}
# The compile of one test file against the scratch copy (or the repository for pop-fence).
build() {  # build <out> <source> [extra flags...]
  local out=$1 src=$2
  shift 2
  run g++ -std=c++20 -O2 -pthread "$@" "$src" -lgtest -lgtest_main -o "$out"
}

case "$mistake" in
  pop-fence)
    # A fence policy of the deque itself (chase_lev_deque.hpp), so no copy is needed.
    mkdir -p "$scratch"
    build "$scratch/deque_test" stage4_chase_lev/tests/chase_lev_deque_test.cpp -I. -DWSLAB_DEQUE_FENCES=NoPopFence
    # Repetitions of the three stress tests, stopping at the first that sees an item taken twice
    # or lost, for up to ten minutes. The reordering shows only while the owner and a thief run
    # at the same time on two CPUs: threads that take turns on one CPU (pinned with taskset -c 0,
    # or on a virtual machine whose host has taken a CPU away for a while) never show it, so the
    # budget is in time, to outlast such a spell, and the script reports how many CPUs the
    # repetitions kept busy (CPU time over wall time).
    start=$SECONDS rep=0
    TIMEFORMAT='%R %U %S'  # each repetition's wall, user and system seconds, a line in times.txt
    : > "$scratch/times.txt"
    while ((SECONDS - start < 600)); do
      rep=$((rep + 1))
      status=0
      { time "$scratch/deque_test" --gtest_filter='*Stress*' > "$scratch/out.txt" 2>&1 || status=$?; } 2>> "$scratch/times.txt"
      if [ "$status" != 0 ]; then
        grep -m3 -E 'Failure|Expected|Which is' "$scratch/out.txt" >&2 || true
        say "CAUGHT in repetition $rep: a stress test saw an item taken twice or lost"
        exit 0
      fi
    done
    busy=$(awk '{ wall += $1; cpu += $2 + $3 } END { printf "%.2f", (wall > 0 ? cpu / wall : 0) }' "$scratch/times.txt")
    say "NOT caught in $rep repetitions over $((SECONDS - start)) s, $busy CPUs busy on average (the table says the stress tests catch it; only threads running at once on two CPUs can)"
    exit 1
    ;;
  relaxed-steal-cas)
    copy_sources
    run sed -i '/StealResult<T> steal()/,/StealOutcome::success, item/ s/(t, t + 1, std::memory_order_seq_cst,/(t, t + 1, std::memory_order_relaxed,/' \
      "$scratch/stage4_chase_lev/chase_lev_deque.hpp"
    diff "$repo/stage4_chase_lev/chase_lev_deque.hpp" "$scratch/stage4_chase_lev/chase_lev_deque.hpp" >&2 && {
      say "the sed changed nothing: chase_lev_deque.hpp no longer has the line it edits"
      exit 1
    }
    # The two builds at once, one per core.
    build "$scratch/deque_test" "$scratch/stage4_chase_lev/tests/chase_lev_deque_test.cpp" -I"$scratch" &
    plain=$!
    build "$scratch/deque_test_tsan" "$scratch/stage4_chase_lev/tests/chase_lev_deque_test.cpp" -I"$scratch" -O1 -g -fsanitize=thread
    wait "$plain"
    caught=0
    plain_reps=10 tsan_reps=3  # the lab's tool table states both
    run "$scratch/deque_test" --gtest_filter='*Stress*' --gtest_repeat=$plain_reps > "$scratch/out.txt" 2>&1 || caught=1
    tail -1 "$scratch/out.txt" >&2
    run "$scratch/deque_test_tsan" --gtest_filter='*Stress*' --gtest_repeat=$tsan_reps > "$scratch/tsan.txt" 2>&1 || caught=1
    tail -1 "$scratch/tsan.txt" >&2
    if [ "$caught" = 0 ]; then
      say "not caught: $plain_reps repetitions of the stress tests and $tsan_reps under ThreadSanitizer pass"
      exit 0
    fi
    say "CAUGHT (see $scratch/out.txt and tsan.txt)"
    [ "$(uname -m)" = x86_64 ] && { say "the table says nothing catches it on x86-64"; exit 1; }
    exit 0
    ;;
  lost-wakeup)
    copy_sources
    run sed -i '/parking_.announce()/,/find_task(me)/ s/= find_task(me);/= nullptr;/' \
      "$scratch/stage4_chase_lev/chase_lev_pool.hpp"
    diff "$repo/stage4_chase_lev/chase_lev_pool.hpp" "$scratch/stage4_chase_lev/chase_lev_pool.hpp" >&2 && {
      say "the sed changed nothing: chase_lev_pool.hpp no longer has the line it edits"
      exit 1
    }
    build "$scratch/pool_test" "$scratch/stage4_chase_lev/tests/chase_lev_pool_test.cpp" -I"$scratch"
    # The healthy test takes about 60 ms; 10 s without an answer is a hang.
    status=0
    run timeout 10 "$scratch/pool_test" --gtest_filter='ChaseLevParking.IdleAndWake*' > "$scratch/out.txt" 2>&1 || status=$?
    if [ "$status" = 124 ]; then
      say "CAUGHT: the parking test hung (killed after 10 s)"
      exit 0
    fi
    say "NOT caught: the test ended with status $status (the table says it hangs)"
    exit 1
    ;;
  *)
    echo "usage: bash scripts/break_deque.sh pop-fence|relaxed-steal-cas|lost-wakeup" >&2
    exit 2
    ;;
esac
