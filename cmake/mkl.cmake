# Decides whether products with a Session's float32 weights run on MKL's
# packed-matrix GEMM (OPGRAPH_WITH_MKL; kernels/cpu/mkl/mkl_product.cpp) and finds
# MKL's static libraries: those of the mkl-static and mkl-include wheels in the
# Python environment building opgraph (requirements.txt), else a oneAPI
# install's (MKLROOT). Linked statically, on its sequential layer (opgraph
# splits the work over its own threads), with its symbols kept inside
# libopgraph: PyTorch exports the MKL it links, of another version, and the
# two must not bind to each other's functions.
set(OPGRAPH_MKL AUTO CACHE STRING "Run products with constant float32 weights on MKL (AUTO: where MKL's static libraries are found)")
set_property(CACHE OPGRAPH_MKL PROPERTY STRINGS AUTO ON OFF)
set(OPGRAPH_WITH_MKL OFF)
if(OPGRAPH_MKL)  # ON or AUTO
  set(OPGRAPH_MKL_HINTS $ENV{MKLROOT})
  find_package(Python COMPONENTS Interpreter QUIET)
  if(Python_Interpreter_FOUND)
    execute_process(COMMAND "${Python_EXECUTABLE}" -c "import sys; print(sys.prefix)"
                    OUTPUT_VARIABLE OPGRAPH_PYTHON_PREFIX OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    list(PREPEND OPGRAPH_MKL_HINTS ${OPGRAPH_PYTHON_PREFIX})
  endif()
  find_path(MKL_INCLUDE_DIR mkl.h HINTS ${OPGRAPH_MKL_HINTS} PATH_SUFFIXES include NO_DEFAULT_PATH)
  set(OPGRAPH_MKL_LIBRARIES "")
  foreach(part intel_lp64 sequential core)
    find_library(MKL_${part}_LIBRARY libmkl_${part}.a HINTS ${OPGRAPH_MKL_HINTS} PATH_SUFFIXES lib lib/intel64
                 NO_DEFAULT_PATH)
    list(APPEND OPGRAPH_MKL_LIBRARIES ${MKL_${part}_LIBRARY})
  endforeach()
  if(MKL_INCLUDE_DIR AND MKL_intel_lp64_LIBRARY AND MKL_sequential_LIBRARY AND MKL_core_LIBRARY)
    set(OPGRAPH_WITH_MKL ON)
    message(STATUS "opgraph: products with constant float32 weights run on MKL (${MKL_core_LIBRARY})")
  elseif(OPGRAPH_MKL STREQUAL "AUTO")
    message(STATUS "opgraph: MKL's static libraries not found; every float32 product runs on oneDNN "
                   "(pip install -r requirements.txt puts them in the Python environment)")
  else()
    message(FATAL_ERROR "OPGRAPH_MKL=ON, but MKL's static libraries and mkl.h were not found under "
                        "'${OPGRAPH_MKL_HINTS}' (pip install mkl-static mkl-include, or set MKLROOT)")
  endif()
endif()
