#!/usr/bin/env bash
# Builds and runs the outside project tests/consumer against wslab the three ways an engineer gets
# it: installed (cmake --install, then find_package) with g++, clang++-14, clang++-14 + libc++ and
# clang++-19 + libc++-19 (the main program awaits coroutines on the pool), and with g++ for 64-bit
# ARM (cross-compiled, run under qemu-aarch64: cmake/aarch64-linux-gnu.cmake),
# installed and found through pkg-config, and through add_subdirectory with none of wslab's test or
# benchmark packages findable. The installed tree must hold the library and nothing else
# (scripts/check_install.py).
#   bash scripts/consumer.sh            # everything below (about four minutes on two cores)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=${WSLAB_CONSUMER_WORK:-$root/build/consumer}
rm -rf "$work"
mkdir -p "$work"
say() { echo "== consumer: $*" >&2; }
# libc++-14-dev and libc++-19-dev replace each other (both own /usr/include/c++/v1): the clang-14
# builds come first, then the clang19 group swaps libc++ for the clang-19 builds.
bash scripts/deps.sh build libcxx cross

say "install wslab into $work/prefix"
cmake -S . -B "$work/wslab" -G Ninja -DWSLAB_BUILD_TESTS=OFF -DCMAKE_INSTALL_PREFIX="$work/prefix" >/dev/null
cmake --install "$work/wslab" >/dev/null
python3 scripts/check_install.py "$work/prefix"

build_and_run() {  # <name> <cmake arguments...>
  local name=$1; shift
  say "$name"
  cmake -S tests/consumer -B "$work/$name" -G Ninja --no-warn-unused-cli "$@" >/dev/null
  cmake --build "$work/$name" -j2 >/dev/null || cmake --build "$work/$name" -j1
  ctest --test-dir "$work/$name" --output-on-failure >/dev/null
}

# Every public header compiled on its own catches a missing #include, which depends mostly on the
# standard library: g++ checks them against libstdc++ and clang++-19 against libc++. clang++-14
# builds the program only, with either library (the per-header compile with two more compilers
# would add about four CPU-minutes); the ASan build compiles the headers with it through the tests.
build_and_run installed-g++ -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_CXX_COMPILER=g++
build_and_run installed-clang -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_CXX_COMPILER=clang++-14 \
  -DWSLAB_CONSUMER_EVERY_HEADER=OFF
build_and_run installed-clang-libc++ -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_CXX_FLAGS=-stdlib=libc++ \
  -DCMAKE_EXE_LINKER_FLAGS=-stdlib=libc++ -DWSLAB_CONSUMER_EVERY_HEADER=OFF
# The code for other CPUs (cpu_relax(), the stack pointer's reads) compiles only there: every
# header, and the program, built for aarch64 and run under qemu.
build_and_run installed-aarch64 -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake"
bash scripts/deps.sh clang19
build_and_run installed-clang-19-libc++-19 -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_CXX_COMPILER=clang++-19 -DCMAKE_CXX_FLAGS=-stdlib=libc++ \
  -DCMAKE_EXE_LINKER_FLAGS=-stdlib=libc++
# A C++20 module over the installed headers (tests/consumer/module), built by hand: CMake 3.25,
# Debian 12's, predates CMake's support for modules (3.28).
say "module: clang++-19 + libc++-19, import wslab"
module_flags=(-std=c++20 -stdlib=libc++ -I"$work/prefix/include")
mkdir -p "$work/module"
clang++-19 "${module_flags[@]}" --precompile tests/consumer/module/wslab.cppm -o "$work/module/wslab.pcm"
clang++-19 -c "$work/module/wslab.pcm" -o "$work/module/wslab.o"
clang++-19 "${module_flags[@]}" -fmodule-file=wslab="$work/module/wslab.pcm" \
  -c tests/consumer/module/main.cpp -o "$work/module/main.o"
clang++-19 -stdlib=libc++ -pthread "$work/module/main.o" "$work/module/wslab.o" -o "$work/module/main"
"$work/module/main" >/dev/null
# The two ways below find the same headers as installed-g++ with the same compiler, which has
# compiled each of them on its own: they build the program only.
PKG_CONFIG_PATH="$work/prefix/share/pkgconfig" build_and_run installed-pkg-config \
  -DWSLAB_CONSUMER_MODE=pkgconfig -DCMAKE_CXX_COMPILER=g++ -DWSLAB_CONSUMER_EVERY_HEADER=OFF

# add_subdirectory: any find_package of a test or benchmark package fails the configure, the
# consumer's ctest has only its own test, and its build type stays unset.
disabled=()
for package in GTest fmt benchmark TBB CLI11 Python3; do
  disabled+=("-DCMAKE_DISABLE_FIND_PACKAGE_${package}=ON")
done
build_and_run subdirectory -DWSLAB_CONSUMER_MODE=subdirectory -DWSLAB_SOURCE_DIR="$root" \
  -DCMAKE_CXX_COMPILER=g++ -DWSLAB_CONSUMER_EVERY_HEADER=OFF "${disabled[@]}"
tests=$(ctest --test-dir "$work/subdirectory" -N | sed -n 's/^Total Tests: //p')
[ "$tests" = 1 ] || { echo "consumer: wslab added tests to the consumer ($tests in all)" >&2; exit 1; }
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$work/subdirectory/CMakeCache.txt")
[ -z "$build_type" ] || { echo "consumer: wslab set the consumer's build type to $build_type" >&2; exit 1; }
say "ok: installed with g++, clang++-14, clang++-14 + libc++, g++ for aarch64, clang++-19 + libc++-19, as a module, through pkg-config; add_subdirectory without test packages"
