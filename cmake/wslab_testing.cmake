# The registry of pools (registry/pools.cpp), compiled once per build into a static library
# instead of in every file that makes a pool by name (each such file would otherwise instantiate
# every pool's code). wslab_link_registry(<target> [TRACED]) links it. The trace hooks must be
# compiled the same way in every translation unit of a program (common/trace.hpp), so a program
# built with them (it links wslab_tracing) passes TRACED and gets wslab_registry_traced.
function(wslab_link_registry target)
  cmake_parse_arguments(ARG "TRACED" "" "" ${ARGN})
  set(lib wslab_registry)
  if(ARG_TRACED)
    set(lib wslab_registry_traced)
  endif()
  if(NOT TARGET ${lib})
    add_library(${lib} STATIC ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../registry/pools.cpp)
    target_link_libraries(${lib} PUBLIC wslab_dev PRIVATE wslab_warnings)
    if(ARG_TRACED)
      target_compile_definitions(${lib} PUBLIC WSLAB_TRACING=1)
    endif()
  endif()
  target_link_libraries(${target} PRIVATE ${lib})
endfunction()

# GoogleTest and the standard headers, precompiled once per build and reused by every test of
# wslab_add_gtest: about 2.3 s of g++ -O3 saved in each of some 40 test files (threadpool_test.cpp:
# 22.0 s without, 19.7 s with). Only headers no wslab macro changes go in (a test with
# its own definitions, such as a TRACED one, could not reuse it under clang). Off with
# -DWSLAB_TEST_PCH=OFF.
option(WSLAB_TEST_PCH "Precompile GoogleTest and the standard headers for the tests" ON)
function(wslab_use_test_pch target)
  if(NOT WSLAB_TEST_PCH)
    return()
  endif()
  if(NOT TARGET wslab_test_pch)
    add_library(wslab_test_pch STATIC ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/test_pch.cpp)
    target_link_libraries(wslab_test_pch PRIVATE wslab_dev wslab_warnings GTest::gtest)
    target_precompile_headers(wslab_test_pch PRIVATE
      <gtest/gtest.h> <algorithm> <atomic> <chrono> <condition_variable> <cstddef> <cstdint>
      <cstdio> <exception> <functional> <memory> <mutex> <new> <optional> <stdexcept> <string>
      <string_view> <thread> <type_traits> <utility> <vector>)
  endif()
  target_precompile_headers(${target} REUSE_FROM wslab_test_pch)
endfunction()

# wslab_add_gtest(<target> SOURCES <files...> LABELS <labels...> [TIMEOUT <seconds>])
# One GoogleTest executable, registered as one ctest entry with the given labels.
# SHARDS n runs the binary as n ctest entries (<target>.shard<i>), each a process running every
# n-th test (GoogleTest's GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX). Under ThreadSanitizer a process
# keeps what it allocated for every thread it started, so a suite that starts many threads
# (fresh stacks, pools per test) must not run in one process.
# TRACED: the test is built with the trace hooks compiled in (it links wslab_tracing), so it gets
# the registry built the same way.
function(wslab_add_gtest target)
  cmake_parse_arguments(ARG "TRACED" "TIMEOUT;SHARDS" "SOURCES;LABELS" ${ARGN})
  add_executable(${target} ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE wslab_dev wslab_warnings GTest::gtest GTest::gtest_main)
  if(ARG_TRACED)
    wslab_link_registry(${target} TRACED)
  else()
    wslab_link_registry(${target})
    wslab_use_test_pch(${target})
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  if(NOT ARG_SHARDS)
    add_test(NAME ${target} COMMAND ${target})
    set(tests ${target})
  else()
    set(tests "")
    math(EXPR last "${ARG_SHARDS} - 1")
    foreach(i RANGE ${last})
      add_test(NAME ${target}.shard${i} COMMAND ${target})
      set_tests_properties(${target}.shard${i} PROPERTIES
        ENVIRONMENT "GTEST_TOTAL_SHARDS=${ARG_SHARDS};GTEST_SHARD_INDEX=${i}")
      list(APPEND tests ${target}.shard${i})
    endforeach()
  endif()
  set_tests_properties(${tests} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
endfunction()

# wslab_add_tsan_catch(<target> SOURCES <files...> LABELS <labels...>)
# A deliberately broken variant that ThreadSanitizer must catch: built only under TSan, and
# registered WILL_FAIL with halt_on_error, so that the entry passes only when TSan reports.
function(wslab_add_tsan_catch target)
  if(CMAKE_CXX_FLAGS MATCHES "-fsanitize=thread")
    wslab_add_gtest(${target} ${ARGN})
    set_tests_properties(${target} PROPERTIES WILL_FAIL TRUE
                         ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1")
  endif()
endfunction()

# Programs that no test runs (the micro-benchmarks, the trace overhead probes, the pdu demo) are
# left out of the default build, so that the README's test command compiles only what ctest runs.
# `cmake --build --preset release --target wslab_programs` builds every one of them (CI does), and
# each builds on its own by name.
add_custom_target(wslab_programs)
function(wslab_program target)
  set_target_properties(${target} PROPERTIES EXCLUDE_FROM_ALL TRUE)
  add_dependencies(wslab_programs ${target})
endfunction()
