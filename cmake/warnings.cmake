# The compiler warnings opgraph's own targets build with, and OPGRAPH_WERROR,
# which makes them errors (CI builds turn it on: see .ci/run). Third-party
# code stays out: nanobind's headers are system includes of opgraph._C, and
# the Debian packages' headers are system includes already.
#
# opgraph_target_warnings(TARGET...) adds them to each target: to its C and
# C++ sources, and to the host code of its CUDA sources through -Xcompiler.
# OPGRAPH_WERROR sets CMake's COMPILE_WARNING_AS_ERROR, which gives gcc
# -Werror and nvcc `-Werror all-warnings` (its own diagnostics); the host
# compiler nvcc runs gets -Werror through -Xcompiler.
option(OPGRAPH_WERROR "Treat compiler warnings in opgraph's own code as errors" OFF)

# -Wpedantic for C and C++ only: on nvcc's generated host code it reports the
# `# 1 "file"` line markers nvcc writes.
set(OPGRAPH_WARNINGS -Wall -Wextra -Wpedantic)
# GCC 12's -Wrestrict reports an overlapping memcpy inside libstdc++ wherever
# `"text" + std::string(...)` is inlined (GCC bug 105651): a false positive
# that code cannot avoid short of never adding a string to a literal.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
   AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  list(APPEND OPGRAPH_WARNINGS -Wno-restrict)
endif()
set(OPGRAPH_CUDA_HOST_WARNINGS -Xcompiler=-Wall,-Wextra$<$<BOOL:${OPGRAPH_WERROR}>:,-Werror>)

function(opgraph_target_warnings)
  foreach(target IN LISTS ARGN)
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:C,CXX>:${OPGRAPH_WARNINGS}>"
                                             "$<$<COMPILE_LANGUAGE:CUDA>:${OPGRAPH_CUDA_HOST_WARNINGS}>")
    set_target_properties(${target} PROPERTIES COMPILE_WARNING_AS_ERROR ${OPGRAPH_WERROR})
  endforeach()
endfunction()
