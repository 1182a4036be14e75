# CMake's initial cache (cmake -C) for the demo's own build folder, build-demo/, which
# scripts/demo.sh configures and the demo_build_size test checks: count24 and only what it links,
# with no CUDA object (the backend off), no NCCL or MPI engine (the demo runs one process), no test
# suite and no benchmark. It is not the normal build: build/ (scripts/test.sh, plain CMake) keeps
# the CUDA backend, MPI and every suite, and is never configured with this file, so running the
# demo and the tests in either order rebuilds nothing in the other's folder.
set(POSGRAD_CUDA OFF CACHE STRING "Build the CUDA backend: AUTO, ON or OFF")
set(POSGRAD_TESTS OFF CACHE BOOL "Build the tests")
set(POSGRAD_BENCH OFF CACHE BOOL "Build the benchmarks")
set(CMAKE_DISABLE_FIND_PACKAGE_MPI ON CACHE BOOL "The demo runs one process")
