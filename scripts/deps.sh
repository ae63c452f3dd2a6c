#!/usr/bin/env bash
# Installs the Debian packages wslab needs, and only the missing ones. Safe to run repeatedly.
# Each script asks for the groups it uses, so the README's test command does not wait for the
# packages of the benchmark comparison, the profilers or the sanitizer builds:
#   bash scripts/deps.sh              # build: everything the Release build (tests, harness) needs
#   bash scripts/deps.sh build clang  # ... and clang++-14 with its sanitizer runtimes
#   bash scripts/deps.sh all          # every group but clang19, cross and arm64
# Groups: build, clang (the clang and asan presets), libcxx (the consumer check with libc++),
# clang19 (the consumer check with clang-19 and libc++-19), bench (benchmark comparison, callgrind for the lab),
# cross (a cross compiler for 64-bit ARM and qemu-user: the consumer check's aarch64 build),
# arm64 (the arm64 preset: cross, and GoogleTest and fmt built for arm64, which adds arm64 to
# dpkg's architectures).
set -euo pipefail

build=(
  g++ cmake ninja-build pkg-config   # toolchain
  libgtest-dev                       # GoogleTest (tests)
  libbenchmark-dev                   # Google Benchmark (micro-benchmarks; configured with the tests)
  libfmt-dev                         # tables and output
  libtbb-dev                         # oneTBB: the reference rows of the harness
  libcli11-dev                       # the harness's command line
  libstb-dev                         # stb_image_write: the Mandelbrot PNG
  gnuplot-nox                        # the harness's plots (the trace test draws its timelines)
  python3                            # helper scripts
)
clang=(clang-14 libclang-rt-14-dev)  # clang++-14, and its ASan+UBSan runtimes (only recommended)
libcxx=(clang-14 libc++-14-dev libc++abi-14-dev)
# The consumer check with a recent clang and libc++. libc++-19-dev replaces libc++-14-dev (both
# own /usr/include/c++/v1), so `all` leaves this group out; scripts/consumer.sh installs it last.
clang19=(clang-19 libc++-19-dev libc++abi-19-dev)
# libc6-dev-arm64-cross is only recommended by the cross compiler, and recommends are left out below.
cross=(g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)
arm64=("${cross[@]}" libgtest-dev:arm64 libfmt-dev:arm64)
bench=(
  libbenchmark-tools python3-scipy   # Google Benchmark's compare.py and what it imports
  valgrind                           # callgrind: instructions per task where perf has no counters (lab)
)

[ $# -gt 0 ] || set -- build
packages=()
for group in "$@"; do
  case "$group" in
    build) packages+=("${build[@]}") ;;
    clang) packages+=("${clang[@]}") ;;
    libcxx) packages+=("${libcxx[@]}") ;;
    clang19) packages+=("${clang19[@]}") ;;
    bench) packages+=("${bench[@]}") ;;
    cross) packages+=("${cross[@]}") ;;
    arm64) packages+=("${arm64[@]}") ;;
    all) packages+=("${build[@]}" "${clang[@]}" "${libcxx[@]}" "${bench[@]}") ;;
    *) echo "deps.sh: unknown group '$group' (build, clang, libcxx, clang19, bench, cross, arm64, all)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)

echo "wslab: installing missing Debian packages: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "wslab: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
# Packages of another architecture (NAME:arm64) come from Debian's multiarch archive once dpkg
# knows the architecture; apt-get update then fetches its package lists.
for p in "${missing[@]}"; do
  arch=${p#*:}
  if [ "$arch" != "$p" ] && ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
    echo "wslab: adding $arch to dpkg's architectures (dpkg --add-architecture $arch)" >&2
    $sudo dpkg --add-architecture "$arch"
  fi
done
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
