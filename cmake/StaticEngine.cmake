# The TUN engine as the Android app ships it: static-pie executables built by the project in
# client/tun/static (its own CMake project, so that it can use a cross compiler), for arm64
# (qs-engine-arm64, and the engine's unit tests for qemu-aarch64-static) and for this
# machine (qs-engine-static, run under an Android-like seccomp filter by tests/tun). Both
# land in <build>/client/tun beside the WireGuard helpers. Needs Debian's
# crossbuild-essential-arm64 and nettle-dev:arm64 (scripts/install.sh installs them).
include(ExternalProject)
find_program(QS_AARCH64_CXX aarch64-linux-gnu-g++)
if(NOT QS_AARCH64_CXX OR NOT EXISTS /usr/lib/aarch64-linux-gnu/libnettle.a)
  message(FATAL_ERROR "the arm64 engine needs crossbuild-essential-arm64 and nettle-dev:arm64 "
                      "(scripts/install.sh installs both)")
endif()

set(QS_TUN_BIN_DIR ${CMAKE_BINARY_DIR}/client/tun)
# A compiler launcher (ccache, scripts/ccache.sh) serves the engines' builds too.
set(QS_STATIC_LAUNCHER)
if(CMAKE_CXX_COMPILER_LAUNCHER)
  set(QS_STATIC_LAUNCHER -DCMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER}
                         -DCMAKE_C_COMPILER_LAUNCHER=${CMAKE_C_COMPILER_LAUNCHER})
endif()
function(qs_static_engine name output)
  ExternalProject_Add(${name}
    SOURCE_DIR ${PROJECT_SOURCE_DIR}/client/tun/static
    BINARY_DIR ${QS_TUN_BIN_DIR}/${name}
    CMAKE_ARGS -DQS_PROJECT_VERSION=${PROJECT_VERSION} -DQS_WERROR=${QS_WERROR}
               -DCMAKE_BUILD_TYPE=RelWithDebInfo ${QS_STATIC_LAUNCHER} ${ARGN}
    BUILD_ALWAYS ON  # its own ninja decides what is out of date
    INSTALL_COMMAND ${CMAKE_COMMAND} -E copy_if_different <BINARY_DIR>/qs-engine
                    ${QS_TUN_BIN_DIR}/${output}
    USES_TERMINAL_BUILD ON)
endfunction()
qs_static_engine(qs_engine_arm64 qs-engine-arm64 -DQS_STATIC_TESTS=ON
                 -DCMAKE_TOOLCHAIN_FILE=${PROJECT_SOURCE_DIR}/cmake/aarch64-linux-gnu.cmake)
qs_static_engine(qs_engine_static qs-engine-static)

# The engine's unit tests (tests/unit/tun), cross-built, under qemu-aarch64-static.
find_program(QS_QEMU_AARCH64 qemu-aarch64-static REQUIRED
             DOC "qemu-user-static (scripts/install.sh installs it)")
add_test(NAME tun_tests_arm64_qemu
         COMMAND ${QS_QEMU_AARCH64} ${QS_TUN_BIN_DIR}/qs_engine_arm64/tun_tests --gtest_brief=1)
set_tests_properties(tun_tests_arm64_qemu PROPERTIES LABELS "unit;tun;android" TIMEOUT 300)
