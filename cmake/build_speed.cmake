# How the many small sources of the test suites and the apps compile in less CPU time, set per
# target so that a source added to a target's folder is covered without editing this file:
#
#   posgrad_unity_build(TARGET [BATCH n] [SKIP file...])
#       CMake's unity build: the target's sources are compiled BATCH (default 8) at a time, each
#       batch one generated file that #includes them, so the headers they share (posgrad's own,
#       Boost.Test, the standard library) are parsed, and their inline functions and templates
#       compiled, once per batch instead of once per file. Batches are made in source order (the
#       folder's files sorted by name). SKIP names files compiled on their own (e.g. a suite's
#       main.cpp, which defines BOOST_TEST_MODULE before it includes Boost.Test).
#       A file in a batch sees the file-scope names of the files before it: two files of one
#       target may not both define the same name in an anonymous namespace (or as static). Give
#       such helpers a name that says what they do, or put the file in SKIP with the reason.
#       -DPOSGRAD_UNITY_BUILD=OFF compiles every file on its own (e.g. to check that a file
#       includes all it uses), and without the libraries' precompiled header (CMakeLists.txt).
#
#   posgrad_test_optimization(TARGET)
#       the test suites' own code at -O1 in an optimised build (Release, RelWithDebInfo): it sets
#       up inputs and compares outputs, the work it checks runs in the libraries, which keep their
#       -O3; GCC takes about a third less time at -O1 on this code. Debug builds (the sanitizer
#       stage's -O1 -g1) are left as they are.
#
# Deliberately does not: touch the posgrad libraries (their objects keep one file per object and their
# own flags, which the benchmarks measure) or the CUDA objects, or precompile headers (the
# targets do that themselves, with target_precompile_headers).
option(POSGRAD_UNITY_BUILD "Compile the test suites and the apps' sources in batches (unity build), the libraries with a precompiled header" ON)

function(posgrad_unity_build target)
  cmake_parse_arguments(PARSE_ARGV 1 unity "" "BATCH" "SKIP")
  if(NOT POSGRAD_UNITY_BUILD)
    return()
  endif()
  if(NOT unity_BATCH)
    set(unity_BATCH 8)
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${unity_BATCH})
  # GCC warns when a type with linkage (a Boost.Test case) derives from a type of an anonymous
  # namespace (a fixture) defined in an #included file, which every file of a batch is; in the
  # file's own translation unit, as written, the same code is fine.
  target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-Wno-subobject-linkage>)
  if(unity_SKIP)
    set_source_files_properties(${unity_SKIP} TARGET_DIRECTORY ${target}
                                PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  endif()
endfunction()

function(posgrad_test_optimization target)
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release,RelWithDebInfo,MinSizeRel>:-O1>)
endfunction()
