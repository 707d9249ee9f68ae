# Cross-compiling for arm64 with Debian's crossbuild-essential-arm64; libraries from Debian's
# multiarch packages (`dpkg --add-architecture arm64`, then e.g. nettle-dev:arm64), which
# the cross compiler finds by itself in /usr/lib/aarch64-linux-gnu. Headers are shared.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
