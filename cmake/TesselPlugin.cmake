# tessel_add_plugin(NAME SOURCES...): a Tessel plugin (docs/extending.md), a
# shared module that includes tessel/Extension/ (target Tessel::Extension)
# and links nothing of Tessel's. Loaded by `tesselc --load-plugin` and
# `tessel-run --load-plugin`.
function(tessel_add_plugin name)
  add_library(${name} MODULE ${ARGN})
  target_link_libraries(${name} PRIVATE Tessel::Extension)
  target_compile_features(${name} PRIVATE cxx_std_17)
  # Only the entry point (TESSEL_PLUGIN) is exported.
  set_target_properties(${name} PROPERTIES
    CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
endfunction()
