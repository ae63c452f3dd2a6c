#!/usr/bin/env bash
# Configures one CMake preset (build/<preset>), as `cmake --preset <preset>` does, but also right
# after the preset's compiler changed (the asan preset moved from g++ to clang++-14): CMake then
# deletes the tree's cache and configures again keeping only the compiler, so the preset's other
# variables (the sanitizer flags, the build type) would silently be lost. Such a tree is
# configured afresh instead.
#   bash scripts/configure_preset.sh asan
set -euo pipefail
cd "$(dirname "$0")/.."
preset=$1
cache=build/$preset/CMakeCache.txt
# The cache's compiler as a file: CMake stores it as given ("g++") or as found ("/usr/bin/g++").
compiler() {
  local c
  c=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$cache" 2>/dev/null || true)
  [ -z "$c" ] || readlink -f "$(command -v "$c" || echo "$c")"
}
before=$(compiler)
cmake --preset "$preset" >/dev/null
if [ -n "$before" ] && [ "$(compiler)" != "$before" ]; then
  echo "== wslab: build/$preset was configured with $before; configuring it afresh" >&2
  cmake --preset "$preset" --fresh >/dev/null
fi
