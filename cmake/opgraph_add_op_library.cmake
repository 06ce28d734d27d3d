# opgraph_add_op_library(NAME SOURCES...)
#
# Builds an op package: a shared library that opgraph.load_library() and
# opgraph::load_library() load. It uses only the header-only SDK, so it does
# not link against libopgraph and keeps loading across opgraph releases of the
# same ABI major version.
function(opgraph_add_op_library name)
  if(NOT ARGN)
    message(FATAL_ERROR "opgraph_add_op_library(${name}): no source files given")
  endif()
  add_library(${name} MODULE ${ARGN})
  target_link_libraries(${name} PRIVATE opgraph::sdk)
  target_compile_features(${name} PRIVATE cxx_std_20)
  set_target_properties(${name} PROPERTIES
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
    target_compile_options(${name} PRIVATE -O3)
  endif()
endfunction()
