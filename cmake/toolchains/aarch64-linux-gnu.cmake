# Cross-build for AArch64 Linux on a Debian x86-64 machine, tests run under qemu-user:
#   apt-get install g++-aarch64-linux-gnu qemu-user
#   cmake -S . -B build/aarch64 -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTC_BUILD_BENCHMARKS=OFF \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
#   cmake --build build/aarch64 && ctest --test-dir build/aarch64 -E 'consumer|model'
# qemu-user does not keep the store-load order of AArch64's stlr/ldar on an x86-64 host, so
# tests built on seq_cst handshakes can hang there (guides/reliability.md, "The AArch64 build").
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_ASM_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
# Catch2 and moodycamel's queue are headers (and CMake packages) that do not depend on the target.
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
