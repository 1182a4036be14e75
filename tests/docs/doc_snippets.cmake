# The C++ of README.md and docs/*.md as programs, and the tests that keep the docs true
# (included by tests/CMakeLists.txt).
#
# At configure time tests/docs/extract_blocks.sh writes every ```cpp program or snippet of the
# checked Markdown files to <build>/doc_snippets/src/<id>.cpp; each becomes a program doc_<id>
# against posgrad, outside `all` (a drifted doc must not break a plain build) and built by the
# docs_snippets_build test instead. The docs test (check_docs.sh) then runs them, checks quoted
# listings against their files and runs the documented commands. Editing a Markdown file
# re-runs the extraction at the next build. Files left out: tests/docs/excluded.txt.
set(doc_dir ${PROJECT_BINARY_DIR}/doc_snippets)

file(GLOB doc_files RELATIVE ${PROJECT_SOURCE_DIR} CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md ${PROJECT_SOURCE_DIR}/docs/*/*.md)
list(PREPEND doc_files README.md)
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/excluded.txt doc_exclusions REGEX "^[^#].*:")
foreach(exclusion IN LISTS doc_exclusions)
  string(REGEX REPLACE ":.*" "" excluded_path "${exclusion}")
  list(REMOVE_ITEM doc_files ${excluded_path})
endforeach()

set(doc_inputs ${CMAKE_CURRENT_LIST_DIR}/extract_blocks.sh ${CMAKE_CURRENT_LIST_DIR}/excluded.txt)
foreach(doc IN LISTS doc_files)
  list(APPEND doc_inputs ${PROJECT_SOURCE_DIR}/${doc})
endforeach()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${doc_inputs})

# Extract into a staging folder, then copy only what changed (unchanged snippets are not rebuilt).
file(REMOVE_RECURSE ${doc_dir}/staging)
execute_process(
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/extract_blocks.sh ${doc_dir}/staging ${PROJECT_SOURCE_DIR} ${doc_files}
  RESULT_VARIABLE extract_result ERROR_VARIABLE extract_error)
if(NOT extract_result EQUAL 0)
  message(WARNING "Extracting the C++ of the docs failed (the docs test will fail too):\n${extract_error}")
endif()

set(doc_targets)
if(EXISTS ${doc_dir}/staging/blocks.tsv)
  file(STRINGS ${doc_dir}/staging/blocks.tsv doc_blocks REGEX "\tcpp-(program|snippet)\t")
  foreach(block IN LISTS doc_blocks)
    string(REGEX MATCH "^[A-Za-z0-9_]+" doc_id "${block}")
    configure_file(${doc_dir}/staging/${doc_id}.cpp ${doc_dir}/src/${doc_id}.cpp COPYONLY)
    add_executable(doc_${doc_id} EXCLUDE_FROM_ALL ${doc_dir}/src/${doc_id}.cpp)
    target_link_libraries(doc_${doc_id} PRIVATE posgrad)
    set_target_properties(doc_${doc_id} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${doc_dir}/bin)
    list(APPEND doc_targets doc_${doc_id})
  endforeach()
endif()
add_custom_target(doc_snippets)
if(doc_targets)
  add_dependencies(doc_snippets ${doc_targets})
endif()

# Builds the programs above (a failed compile shows the Markdown file and line), one compile at a
# time: it takes one CTest slot (PROCESSORS 1), beside the apps suite, and starts first (COST), as
# the two docs tests wait for it.
add_test(NAME docs_snippets_build
         COMMAND ${CMAKE_COMMAND} --build ${PROJECT_BINARY_DIR} --target doc_snippets --parallel 1)
set_tests_properties(docs_snippets_build PROPERTIES FIXTURES_SETUP doc_snippets COST 1000)
if(POSGRAD_BENCH)
  set(doc_bench_built ON)  # the documented benchmark commands run; without them they are skipped
else()
  set(doc_bench_built OFF)
endif()
add_test(NAME docs
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_docs.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/bin
                 ${doc_dir}/bin ${doc_bench_built})
# One thread: the documented commands' results do not depend on it (the suites test the threaded
# kernels), and the test then takes one core beside the others (tests/CMakeLists.txt, PROCESSORS).
set_tests_properties(docs PROPERTIES FIXTURES_REQUIRED doc_snippets ENVIRONMENT "OMP_NUM_THREADS=1")
# The same check as a fresh clone with no data beside it sees it: no POSGRAD_DATA_DIR and no
# ../shared/data search (POSGRAD_DATA_SEARCH=off); the commands that need a data set are skipped.
add_test(NAME docs_without_data
         COMMAND ${CMAKE_COMMAND} -E env --unset=POSGRAD_DATA_DIR POSGRAD_DATA_SEARCH=off
                 bash ${CMAKE_CURRENT_LIST_DIR}/check_docs.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/bin
                 ${doc_dir}/bin ${doc_bench_built})
set_tests_properties(docs_without_data PROPERTIES FIXTURES_REQUIRED doc_snippets ENVIRONMENT "OMP_NUM_THREADS=1")
