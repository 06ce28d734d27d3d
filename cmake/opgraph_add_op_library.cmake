# opgraph_add_op_library(NAME SOURCES...)
#
# Builds an op package: a shared library that opgraph.load_library() and
# opgraph::load_library() load. It uses only the header-only SDK, so it does
# not link against libopgraph and keeps loading across opgraph releases of the
# same ABI major version.
#
# CUDA sources (.cu) are compiled with nvcc once the project has enabled CUDA
# (project(... LANGUAGES CXX CUDA) or enable_language(CUDA)); the package then
# links the CUDA runtime statically, so it needs only the driver at run time,
# and its C++ sources see OPGRAPH_PACKAGE_HAS_CUDA to register CUDA kernels.
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
    target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O3>)
  endif()
  list(FILTER ARGN INCLUDE REGEX "\\.cu$")
  if(ARGN)
    get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
    if(NOT "CUDA" IN_LIST languages)
      message(FATAL_ERROR "opgraph_add_op_library(${name}): CUDA sources given (${ARGN}) but CUDA is not "
                          "enabled; add `enable_language(CUDA)` (or list CUDA in project(LANGUAGES)) first")
    endif()
    find_package(CUDAToolkit REQUIRED)
    target_link_libraries(${name} PRIVATE CUDA::cudart_static)
    target_compile_definitions(${name} PRIVATE OPGRAPH_PACKAGE_HAS_CUDA=1)
    set_target_properties(${name} PROPERTIES CUDA_VISIBILITY_PRESET hidden)
  endif()
endfunction()
