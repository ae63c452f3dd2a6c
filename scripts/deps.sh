#!/usr/bin/env bash
# Installs the Debian packages wslab needs, and only the missing ones. Safe to run repeatedly.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config   # toolchain
  clang-14 libc++-14-dev libc++abi-14-dev  # the clang and asan presets; libc++ for the consumer check
  libclang-rt-14-dev                 # clang's ASan+UBSan runtimes (only recommended by clang-14)
  libgtest-dev                       # GoogleTest (tests)
  libbenchmark-dev libbenchmark-tools  # Google Benchmark + its compare.py
  libfmt-dev                         # tables and output
  libtbb-dev                         # oneTBB: the reference rows of the harness
  libcli11-dev                       # the harness's command line
  libstb-dev                         # stb_image_write: the Mandelbrot PNG
  gnuplot-nox                        # the harness's plots
  valgrind                           # callgrind: instructions per task where perf has no counters (lab)
  python3 python3-scipy              # helper scripts; scipy+numpy for benchmark compare.py
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "wslab: installing missing Debian packages: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "wslab: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
