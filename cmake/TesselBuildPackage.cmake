# The build tree as a CMake package, TesselBuild (build/TesselBuildConfig.cmake):
# the libraries the Python module links (the compile driver, the tooling
# library, what they link) and tessel-run, as imported targets of the same
# names. `TESSEL_BUILD_DIR=build pip install ./python-bindings` builds only
# the module against them instead of compiling the compiler again
# (python-bindings/CMakeLists.txt, pyproject.toml).

# The project's targets that `roots` link, directly or not (genexes such as
# $<LINK_ONLY:x> read as x; imported targets and plain libraries left out).
function(tessel_link_closure out)
  set(todo ${ARGN})
  set(done)
  while(todo)
    list(POP_FRONT todo t)
    if(NOT TARGET ${t} OR t IN_LIST done)
      continue()
    endif()
    get_target_property(imported ${t} IMPORTED)
    if(imported)
      continue()
    endif()
    list(APPEND done ${t})
    get_target_property(type ${t} TYPE)
    set(deps)
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(deps ${t} LINK_LIBRARIES)
    endif()
    get_target_property(ideps ${t} INTERFACE_LINK_LIBRARIES)
    foreach(d IN LISTS deps ideps)
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" d "${d}")
      if(d AND NOT d MATCHES "NOTFOUND$" AND NOT d MATCHES "^\\$<")
        list(APPEND todo ${d})
      endif()
    endforeach()
  endwhile()
  set(${out} ${done} PARENT_SCOPE)
endfunction()

if(TARGET TesselDriver AND TARGET TesselTooling AND TARGET tessel-run)
  tessel_link_closure(_tessel_build_targets
    TesselDriver TesselTooling TesselVersion tessel-run)
  export(TARGETS ${_tessel_build_targets}
         FILE ${CMAKE_BINARY_DIR}/TesselBuildTargets.cmake)
  configure_file(${CMAKE_SOURCE_DIR}/cmake/TesselBuildConfig.cmake.in
                 ${CMAKE_BINARY_DIR}/TesselBuildConfig.cmake @ONLY)
endif()
