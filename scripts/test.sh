#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test.
#   bash scripts/test.sh                 # the Release build
#   bash scripts/test.sh tsan asan       # the same suite under ThreadSanitizer (g++), then
#                                        # ASan+UBSan (clang++-14)
#   bash scripts/test.sh clang           # the Release build with clang++-14 (CI leaves it out:
#                                        # its asan build already compiles every test with clang)
#   bash scripts/test.sh arm64           # cross-built for 64-bit ARM and run under qemu-aarch64
#                                        # (cmake/aarch64-linux-gnu.cmake: what it checks, and why
#                                        # not weak memory; CI leaves it out: about 20 minutes)
#   bash scripts/test.sh release -L stage1_global_lock   # ctest arguments after the presets
# Presets (CMakePresets.json): release, clang, debug, tsan, asan, arm64.
set -euo pipefail
cd "$(dirname "$0")/.."

presets=()
while [ $# -gt 0 ] && [[ "$1" =~ ^(release|clang|debug|tsan|asan|arm64)$ ]]; do presets+=("$1"); shift; done
[ ${#presets[@]} -gt 0 ] || presets=(release)
groups=(build)
[[ " ${presets[*]} " =~ \ (clang|asan)\  ]] && groups+=(clang)
[[ " ${presets[*]} " =~ \ arm64\  ]] && groups+=(arm64)
bash scripts/deps.sh "${groups[@]}"

for preset in "${presets[@]}"; do
  echo "== wslab: ${preset} build and tests" >&2
  bash scripts/configure_preset.sh "$preset"
  # Every target ctest runs (programs no test runs are left out: the target wslab_programs).
  # -j nproc, not ninja's nproc+2: a sanitized test file takes several GB to compile.
  cmake --build --preset "$preset" -j "$(nproc)"
  ctest --preset "$preset" "$@"
done
