# The library target wslab::wslab and its installation.
#
# Consumers include <wslab/threadpool.hpp> (the stage-5 ThreadPool) or a stage's pool by its
# folder, <wslab/stage4_chase_lev/chase_lev_pool.hpp>. The installed tree is
#   include/wslab/threadpool.hpp            forwards to stage5_parallel_algos/threadpool.hpp
#   include/wslab/common/...                what several stages share
#   include/wslab/stage<N>_<name>/...       each stage's headers (no tests, benchmarks or demos)
#   lib/cmake/wslab/                        wslabConfig.cmake, its version file and targets
#   share/pkgconfig/wslab.pc                for pkg-config (header-only: the include path, -pthread)
# Only what the library's headers include is installed: the tests, the labs, the harness, the
# registry and the demos keep their headers in the source tree (scripts/check_install.py checks
# every installed header is reached from a public one).
# Inside the headers every include of another wslab header is relative to the including file
# ("../common/config.hpp"), so it is found next to the file before any include path is searched:
# a consumer's own common/config.hpp can never stand in for ours.

include(GNUInstallDirs)

# Every folder whose headers form the library, and the headers in it.
set(WSLAB_HEADER_DIRS common stage1_global_lock stage2_per_thread_mutex stage3_lock_wsq
                      stage4_chase_lev stage5_parallel_algos)
set(_wslab_forward "// The public header of wslab: wslab::ThreadPool and the parallel algorithms.\n"
                   "#pragma once\n#include \"stage5_parallel_algos/threadpool.hpp\"\n")

# The build tree gets the installed layout too, so add_subdirectory consumers write the same
# #include <wslab/...> lines: a directory with a link to each header folder and the forwarding
# header.
set(_wslab_build_include ${PROJECT_BINARY_DIR}/wslab_include)
file(MAKE_DIRECTORY ${_wslab_build_include}/wslab)
foreach(dir ${WSLAB_HEADER_DIRS})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${dir} ${_wslab_build_include}/wslab/${dir} SYMBOLIC)
endforeach()
file(WRITE ${_wslab_build_include}/wslab/threadpool.hpp ${_wslab_forward})

add_library(wslab INTERFACE)
add_library(wslab::wslab ALIAS wslab)
target_include_directories(wslab INTERFACE $<BUILD_INTERFACE:${_wslab_build_include}>
                                           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(wslab INTERFACE Threads::Threads)
target_compile_features(wslab INTERFACE cxx_std_20)

if(NOT WSLAB_INSTALL)
  return()
endif()

include(CMakePackageConfigHelpers)
set(WSLAB_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/wslab
    CACHE STRING "Where the package config of wslab is installed")

foreach(dir ${WSLAB_HEADER_DIRS})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/wslab
          FILES_MATCHING PATTERN "*.hpp"
          PATTERN "tests" EXCLUDE)
endforeach()
install(FILES ${_wslab_build_include}/wslab/threadpool.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/wslab)

install(TARGETS wslab EXPORT wslabTargets)
install(EXPORT wslabTargets NAMESPACE wslab:: FILE wslabTargets.cmake
        DESTINATION ${WSLAB_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/wslabConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/wslabConfig.cmake
                              INSTALL_DESTINATION ${WSLAB_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/wslabConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES ${PROJECT_BINARY_DIR}/wslabConfig.cmake ${PROJECT_BINARY_DIR}/wslabConfigVersion.cmake
        DESTINATION ${WSLAB_INSTALL_CMAKEDIR})

# pkg-config: header-only, so the file is architecture-independent and goes under share/.
set(WSLAB_INSTALL_PKGCONFIGDIR ${CMAKE_INSTALL_DATADIR}/pkgconfig
    CACHE STRING "Where the pkg-config file of wslab is installed")
# The prefix is found from the file's own place (${pcfiledir}), so an installed tree can move.
file(RELATIVE_PATH WSLAB_PC_TO_PREFIX ${CMAKE_INSTALL_PREFIX}/${WSLAB_INSTALL_PKGCONFIGDIR}
     ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" WSLAB_PC_TO_PREFIX "${WSLAB_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/wslab.pc.in ${PROJECT_BINARY_DIR}/wslab.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/wslab.pc DESTINATION ${WSLAB_INSTALL_PKGCONFIGDIR})
