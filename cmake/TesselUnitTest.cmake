# tessel_add_unittest(NAME SOURCES ... LIBS ...): a gtest executable whose
# every TEST is registered with ctest. Shared by the whole tree's build
# (test/unit) and the runtime built alone (runtime/CMakeLists.txt).
include(GoogleTest)
function(tessel_add_unittest name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
endfunction()
