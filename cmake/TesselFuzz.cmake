# tessel_add_fuzzer(NAME SOURCES ... LIBS ... [INSTRUMENT lib ...]
#                   [INCLUDES dir ...]): one fuzz target, a source file that defines LLVMFuzzerTestOneInput. Shared by the whole tree's build and the
# runtime built alone (runtime/CMakeLists.txt).
#
# - Fuzz build (clang, TESSEL_FUZZ=ON; scripts/fuzz makes it in build-fuzz/):
#   a libFuzzer binary with ASan and UBSan; the INSTRUMENT libraries get the
#   same sanitizers and coverage, so that coverage guides the fuzzer into them.
# - Normal build: the same source linked with test/Fuzz/ReplayMain.cpp, which runs
#   every file of test/Fuzz/corpus/NAME through it once; ctest runs it as
#   fuzz-replay-NAME (a few seconds). The committed corpora hold the seeds
#   and every input that ever crashed the target (docs/fuzzing.md).
# One switch for both halves of the tree; the old names still work.
option(TESSEL_ENABLE_FUZZERS "Build libFuzzer targets (clang only)" OFF)
option(TESSEL_RUNTIME_FUZZ "Build the runtime's libFuzzer targets (clang only)" OFF)
set(TESSEL_FUZZ OFF)
if((TESSEL_ENABLE_FUZZERS OR TESSEL_RUNTIME_FUZZ) AND
   CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  set(TESSEL_FUZZ ON)
endif()
set(TESSEL_FUZZ_CORPORA ${CMAKE_CURRENT_LIST_DIR}/../test/Fuzz/corpus)
set(TESSEL_FUZZ_REPLAY_MAIN ${CMAKE_CURRENT_LIST_DIR}/../test/Fuzz/ReplayMain.cpp)
set(TESSEL_FUZZ_SANITIZERS
    -fsanitize=address,undefined -fno-sanitize=vptr,function
    -fno-sanitize-recover=undefined)

function(tessel_add_fuzzer name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;INSTRUMENT;INCLUDES" ${ARGN})
  if(TESSEL_FUZZ)
    foreach(lib ${ARG_INSTRUMENT})
      get_target_property(done ${lib} TESSEL_FUZZ_INSTRUMENTED)
      if(NOT done)
        target_compile_options(${lib} PRIVATE -fsanitize=fuzzer-no-link
                               ${TESSEL_FUZZ_SANITIZERS})
        set_target_properties(${lib} PROPERTIES TESSEL_FUZZ_INSTRUMENTED ON)
      endif()
    endforeach()
    set(exe ${name})
    add_executable(${exe} ${ARG_SOURCES})
    target_compile_options(${exe} PRIVATE -fsanitize=fuzzer ${TESSEL_FUZZ_SANITIZERS})
    target_link_options(${exe} PRIVATE -fsanitize=fuzzer ${TESSEL_FUZZ_SANITIZERS})
  else()
    set(exe ${name}-replay)
    add_executable(${exe} ${ARG_SOURCES} ${TESSEL_FUZZ_REPLAY_MAIN})
    if(EXISTS ${TESSEL_FUZZ_CORPORA}/${name})
      add_test(NAME fuzz-replay-${name}
               COMMAND ${name}-replay ${TESSEL_FUZZ_CORPORA}/${name})
    endif()
  endif()
  target_link_libraries(${exe} PRIVATE ${ARG_LIBS})
  target_include_directories(${exe} PRIVATE ${ARG_INCLUDES})
endfunction()
