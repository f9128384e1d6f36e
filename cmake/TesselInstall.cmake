# `cmake --install`: the tools, the extension API's headers and the CMake
# package a plugin finds with find_package(Tessel) (docs/extending.md).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

foreach(tool tesselc tessel-run tessel-opt)
  if(TARGET ${tool})
    # Installed, they still find LLVM's and MLIR's libraries where they are.
    set_target_properties(${tool} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()
if(TARGET TesselCuda)
  install(TARGETS TesselCuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
if(TARGET tessel-example-plugin)
  install(TARGETS tessel-example-plugin
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/tessel/plugins)
endif()

install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/tessel/Extension
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tessel)
install(TARGETS TesselExtension EXPORT TesselTargets)
install(EXPORT TesselTargets NAMESPACE Tessel::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Tessel)

file(STRINGS ${CMAKE_SOURCE_DIR}/include/tessel/Extension/Version.h
     _tessel_api REGEX "#define TESSEL_EXTENSION_API_VERSION")
string(REGEX REPLACE ".*VERSION ([0-9]+).*" "\\1" TESSEL_EXTENSION_API_VERSION
       "${_tessel_api}")
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/TesselConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/TesselConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Tessel
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/TesselConfigVersion.cmake
  VERSION ${TESSEL_EXTENSION_API_VERSION} COMPATIBILITY ExactVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/TesselConfig.cmake
              ${CMAKE_BINARY_DIR}/cmake/TesselConfigVersion.cmake
              ${CMAKE_SOURCE_DIR}/cmake/TesselPlugin.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Tessel)
