#!/usr/bin/env bash
# Runs the program fuzzer (tests/fuzz/) for as long as you like, in one or more builds at once:
#   bash scripts/fuzz.sh                                # Release, 10 minutes
#   bash scripts/fuzz.sh --minutes 600 release tsan asan   # ten hours in each build, in parallel
#   bash scripts/fuzz.sh --seed 0x1234 tsan             # a given seed (each run prints its own)
# Builds only wslab_fuzz in each preset's tree, runs each build's fuzzer at the lowest priority
# (nice 19) with its output in <log dir>/<preset>.log (default build/fuzz; under TSan a series of
# five-minute processes, see fuzz_for), and prints one verdict line per build. Exit status 0 only
# if every run passed. A failure's log ends with what failed and the command that replays the
# failing program alone.
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=10
seed=()
logs=build/fuzz
presets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --seed) seed=(--seed "$2"); shift 2 ;;
    --logs) logs="$2"; shift 2 ;;
    release|clang|debug|tsan|asan) presets+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (see the header of scripts/fuzz.sh)" >&2; exit 2 ;;
  esac
done
[[ "$minutes" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --minutes needs a whole number" >&2; exit 2; }
[ ${#presets[@]} -gt 0 ] || presets=(release)
mkdir -p "$logs"

for preset in "${presets[@]}"; do
  bash scripts/configure_preset.sh "$preset"
  cmake --build --preset "$preset" --target wslab_fuzz -j2
done

# The same sanitizer options as the test presets (CMakePresets.json).
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
export ASAN_OPTIONS="detect_leaks=1 abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1"

# Under ThreadSanitizer one process cannot run for hours: TSan's own bookkeeping grows by about
# 18 MB a second with the threads the programs start and join (a Release process stays near
# 45 MB), so a long TSan run is a series of five-minute processes, each with its own seed (each
# prints it). A given --seed replays one process of the whole length.
fuzz_for() {  # <preset> <seconds>
  local preset=$1 left=$2 chunk=$2
  if [ "$preset" = tsan ] && [ ${#seed[@]} -eq 0 ]; then chunk=300; fi
  while [ "$left" -gt 0 ]; do
    local now=$((left < chunk ? left : chunk))
    nice -n 19 "build/$preset/tests/wslab_fuzz" --seconds "$now" "${seed[@]}" || return
    left=$((left - now))
  done
}

pids=()
for preset in "${presets[@]}"; do
  log="$logs/$preset.log"
  echo "== fuzz: $preset for $minutes min, log $log" >&2
  fuzz_for "$preset" $((minutes * 60)) >"$log" 2>&1 &
  pids+=($!)
done

status=0
for i in "${!presets[@]}"; do
  preset="${presets[$i]}"
  if wait "${pids[$i]}"; then
    echo "== fuzz: $preset: $(grep 'PASSED' "$logs/$preset.log" | tr '\n' ' ')" >&2
  else
    rc=$?
    status=1
    echo "== fuzz: $preset: FAILED (exit $rc); the end of $logs/$preset.log:" >&2
    tail -n 40 "$logs/$preset.log" >&2
  fi
done
exit $status
