#!/usr/bin/env bash
# Regenerates the timeline pictures checked in under harness/trace/images/: the grid workload on
# stage 1 and stage 4, each the fastest of 7 recorded runs (the one the OS disturbed least: on a
# shared machine a descheduled worker shows up as a long task or a white gap), the whole run and a
# zoom around the first steal. The Chrome traces (JSON, several MB) are written next to them but not checked in.
#
#   harness/trace/make_images.sh [path/to/trace_demo] [pools...]
#
# Default trace_demo: build/release/harness/trace/trace_demo (cmake --preset release).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
demo="${1:-$here/../../build/release/harness/trace/trace_demo}"
shift || true
pools=("$@")
[ ${#pools[@]} -eq 0 ] && pools=(stage1_global_lock stage4_chase_lev)
mkdir -p "$here/images"
for pool in "${pools[@]}"; do
  # 2 workers (the machine has 2 cores); 4 external items x 2,500 recursive items of ~1 us: few
  # external items and much recursive work (Duffy's 100 x 10,000 shape, scaled to 2 workers), the
  # shape where stealing decides who has work.
  "$demo" --pool "$pool" --threads 2 -E 4 -R 2500 --spin-ns 1000 --runs 7 --pick fastest --zoom-us 40 \
    --out "$here/images/grid_$pool"
  rm -f "$here/images/grid_${pool}.csv" "$here/images/grid_${pool}_zoom.csv"
done
echo "pictures in $here/images (the .json traces there are not checked in: see .gitignore)"
