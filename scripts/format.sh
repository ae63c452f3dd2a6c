#!/usr/bin/env bash
# Formats every C++ file of the repository with clang-format-19 and the repository's .clang-format
# (installing clang-format-19 when it is missing: Debian 12's clang-format 14 does not know
# requires-clauses and splits them). --check changes nothing and fails on the first file that
# differs, as CI runs it.
#   bash scripts/format.sh           # rewrite in place
#   bash scripts/format.sh --check   # CI: exit 1 if any file is not formatted
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
[ $# -eq 0 ] || { echo "usage: bash scripts/format.sh [--check]" >&2; exit 2; }

if ! command -v clang-format-19 >/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "wslab: installing clang-format-19" >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    clang-format-19 >/dev/null
fi

mapfile -t files < <(git ls-files '*.hpp' '*.cpp' '*.h')
if [ "$check" = 1 ]; then
  clang-format-19 --dry-run --Werror "${files[@]}"
  echo "wslab: ${#files[@]} files formatted as .clang-format says" >&2
else
  clang-format-19 -i "${files[@]}"
fi
