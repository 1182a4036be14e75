# The POSGRAD_SANITIZE option: compiles and links every C++ target of the project (library, app
# kit, apps, tests, benchmarks, the docs' snippet programs) with the compiler's sanitizers.
#
#   -DPOSGRAD_SANITIZE=address,undefined   (a list; commas or semicolons; empty = off, the default)
#     address    AddressSanitizer: out-of-bounds, use-after-free, double free; on Linux it also
#                runs LeakSanitizer at exit (leak is implied by address)
#     undefined  UndefinedBehaviorSanitizer, with -fno-sanitize-recover=undefined so that the
#                first report ends the program with an error (a test cannot pass over it)
#     leak       LeakSanitizer alone (without address)
#     thread     ThreadSanitizer (not with address or leak)
# Every value also adds -fno-omit-frame-pointer (readable stacks). The flags go to C++ compiles
# only (nvcc's device code is not instrumented: configure a sanitized build with
# -DPOSGRAD_CUDA=OFF) and to every link; the posgrad_core target (under posgrad) carries them as an interface link
# option too, so that a project that installs a sanitized posgrad and links it gets the runtime.
# Run-time options (ASAN_OPTIONS, UBSAN_OPTIONS) are not set here: scripts/test_sanitized.sh
# sets them, docs/reliability/sanitizers.md explains them.
# This file does not choose the build type or the optimisation level.

set(POSGRAD_SANITIZE "" CACHE STRING
    "Sanitizers for every C++ target, a list of address, undefined, leak, thread (empty: none)")

set(POSGRAD_SANITIZE_FLAGS "")
if(POSGRAD_SANITIZE)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "^(GNU|Clang)$")
    message(FATAL_ERROR "POSGRAD_SANITIZE needs GCC or Clang; the C++ compiler is ${CMAKE_CXX_COMPILER_ID}.")
  endif()
  string(REPLACE "," ";" posgrad_sanitizers "${POSGRAD_SANITIZE}")
  list(TRANSFORM posgrad_sanitizers STRIP)
  list(REMOVE_ITEM posgrad_sanitizers "")
  list(REMOVE_DUPLICATES posgrad_sanitizers)
  set(posgrad_known_sanitizers address undefined leak thread)
  foreach(sanitizer IN LISTS posgrad_sanitizers)
    if(NOT sanitizer IN_LIST posgrad_known_sanitizers)
      message(FATAL_ERROR "POSGRAD_SANITIZE='${POSGRAD_SANITIZE}': unknown sanitizer '${sanitizer}'. "
                          "Known: address, undefined, leak, thread (a list, e.g. "
                          "-DPOSGRAD_SANITIZE=address,undefined).")
    endif()
  endforeach()
  if("thread" IN_LIST posgrad_sanitizers AND
     ("address" IN_LIST posgrad_sanitizers OR "leak" IN_LIST posgrad_sanitizers))
    message(FATAL_ERROR "POSGRAD_SANITIZE='${POSGRAD_SANITIZE}': thread cannot be combined with "
                        "address or leak (the compiler refuses it); build them in separate folders.")
  endif()
  # leak is part of address on Linux: asking for both is asking for address.
  if("address" IN_LIST posgrad_sanitizers)
    list(REMOVE_ITEM posgrad_sanitizers leak)
  endif()
  list(JOIN posgrad_sanitizers "," posgrad_sanitize_joined)
  set(POSGRAD_SANITIZE_FLAGS -fsanitize=${posgrad_sanitize_joined} -fno-omit-frame-pointer)
  if("undefined" IN_LIST posgrad_sanitizers)
    list(APPEND POSGRAD_SANITIZE_FLAGS -fno-sanitize-recover=undefined)
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${POSGRAD_SANITIZE_FLAGS}>")
  add_link_options(${POSGRAD_SANITIZE_FLAGS})
endif()
