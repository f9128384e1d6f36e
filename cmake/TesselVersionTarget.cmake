# The target TesselVersion: the header TesselVersion.h of every tool's
# `--version` (the project's version and the git revision it was built
# from), regenerated at each build by cmake/Version.cmake. Included by
# tools/ and by the runtime's standalone build (tools/tessel-run).
set(TESSEL_VERSION 0.1.0)
set(TESSEL_VERSION_HEADER ${CMAKE_BINARY_DIR}/version/TesselVersion.h)
add_custom_target(tessel-version-header
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_CURRENT_LIST_DIR}/..
          -DOUTPUT=${TESSEL_VERSION_HEADER} -DVERSION=${TESSEL_VERSION}
          -P ${CMAKE_CURRENT_LIST_DIR}/Version.cmake
  BYPRODUCTS ${TESSEL_VERSION_HEADER}
  COMMENT "Tessel version and git revision")
add_library(TesselVersion INTERFACE)
target_include_directories(TesselVersion INTERFACE ${CMAKE_BINARY_DIR}/version)
add_dependencies(TesselVersion tessel-version-header)
