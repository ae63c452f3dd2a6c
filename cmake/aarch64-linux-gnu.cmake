# Toolchain of the arm64 preset (CMakePresets.json) and of scripts/consumer.sh's aarch64 build: the
# tests, or an outside program, cross-built for 64-bit ARM on an x86-64 Debian machine and run
# there under qemu-user, so that code meant for any Linux CPU is compiled and run as on an ARM box,
# without one. scripts/deps.sh cross installs the cross compiler and qemu-user; scripts/deps.sh
# arm64 adds the arm64 builds of GoogleTest and fmt for the tests (Debian multiarch).
#
# What it checks: that every header compiles for aarch64 (its own branches of cpu_relax() and the
# stack-pointer reads included) and that the tests pass there. What it cannot check: weak memory.
# qemu runs each guest load and store as a host one, with x86-64's ordering, so a missing acquire
# or release shows up on a real ARM machine, not here; the model checker is what explores the
# weaker executions (NOTES.md, 'Memory orderings, where each is needed in this code').
#
# Two things qemu-user gets wrong, which the arm64 test preset leaves out:
#  - a seq_cst store followed by a seq_cst load (STLR then LDAR, which ARMv8 keeps in order): qemu
#    (7.2) fences before the store and after the load, not between them, so on an x86-64 host the
#    load can pass the store in the store buffer. Stage 3's queue rests on exactly that pair (its
#    header's last-item race): under qemu its race tests lose and duplicate items (run
#    build/arm64/stage3_lock_wsq/stage3_work_stealing_queue_test to see it), and its pool crashes
#    now and then, as a task taken twice would make it, while the same tests pass on x86-64, and
#    ARMv8 hardware keeps the pair in order. So the preset leaves out stage 3's pool wherever it
#    runs: its label, every test named for it, and the fuzzer, whose programs run on every pool.
#    Stage 4 and the scheduler order that race with seq_cst fences, which qemu does translate into
#    full fences (mfence).
#  - death tests: gtest's threadsafe style re-executes the test program, and qemu-user does not
#    follow an exec of an aarch64 program unless binfmt_misc is set up to hand it to qemu.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Where Debian multiarch puts the arm64 packages' libraries and CMake files.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# Statically linked: Debian 12's qemu-aarch64 (7.2) hangs in the first thread creation of a
# dynamically linked program on the machines we run it on, and runs a static one.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
# ctest runs every test program through qemu.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
