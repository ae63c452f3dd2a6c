#!/usr/bin/env bash
# The README's first command: installs what is missing, builds the harness (Release preset) and
# runs lab_bench's default suite, ending with the tables and the paths of the plots.
#   bash scripts/bench.sh                      # the default suite: about 3 minutes on 2 cores
#   bash scripts/bench.sh --full               # adds ~1 us items and a 1024x1024 Mandelbrot (~10 min)
#   bash scripts/bench.sh --quick              # small sizes, under a minute; what CI runs
#   bash scripts/bench.sh -w grid -p stage1_global_lock,tbb -t 1,2   # any lab_bench options
# Every argument goes to lab_bench (see `bash scripts/bench.sh --help`). Results: results/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh build bench

echo "== wslab: release build of the harness" >&2
cmake --preset release >/dev/null
cmake --build --preset release --target lab_bench >&2  # stdout stays lab_bench's (--json -)
exec build/release/harness/lab_bench "$@"
