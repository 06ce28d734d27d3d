# Decides whether the CUDA backend is built (OPGRAPH_WITH_CUDA) and finds what
# it needs: nvcc and the runtime from the CUDA toolkit, cuBLASLt from the
# toolkit or from the nvidia-cublas wheel of the Python environment building
# opgraph. The backend is a library of its own that the core opens at run
# time, so a build with it still runs where no CUDA library is installed.
set(OPGRAPH_WITH_CUDA OFF)
if(OPGRAPH_CUDA)  # ON or AUTO
  include(CheckLanguage)
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND NOT OPGRAPH_CUDA STREQUAL "AUTO")
    message(FATAL_ERROR "OPGRAPH_CUDA=ON, but no CUDA compiler was found (install the CUDA toolkit or set "
                        "CMAKE_CUDA_COMPILER)")
  endif()
  if(CMAKE_CUDA_COMPILER)
    set(OPGRAPH_WITH_CUDA ON)
  endif()
endif()

if(OPGRAPH_WITH_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # Ampere and Hopper machine code, and PTX that newer GPUs compile at load.
    set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)

  # cuBLASLt: the toolkit's, else the nvidia-cublas wheel's (nvidia/cu13).
  set(OPGRAPH_CUBLAS_HINTS "")
  find_package(Python COMPONENTS Interpreter QUIET)
  if(Python_Interpreter_FOUND)
    execute_process(COMMAND "${Python_EXECUTABLE}" -c
                    "import nvidia.cu13; print(list(nvidia.cu13.__path__)[0])"
                    OUTPUT_VARIABLE OPGRAPH_CUBLAS_HINTS OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
  find_path(CUBLASLT_INCLUDE_DIR cublasLt.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${OPGRAPH_CUBLAS_HINTS}/include)
  find_library(CUBLASLT_LIBRARY NAMES cublasLt libcublasLt.so.13
               HINTS ${CUDAToolkit_LIBRARY_DIR} ${OPGRAPH_CUBLAS_HINTS}/lib)
  if(NOT CUBLASLT_INCLUDE_DIR OR NOT CUBLASLT_LIBRARY)
    set(why "the CUDA backend needs cuBLASLt: install the CUDA toolkit's or `pip install nvidia-cublas` (make does)")
    if(NOT OPGRAPH_CUDA STREQUAL "AUTO")
      message(FATAL_ERROR "${why}, or configure with -DOPGRAPH_CUDA=OFF")
    endif()
    # AUTO builds the backend where it can be built (`pip install` of the
    # package with nvcc on PATH but no cuBLASLt in its build environment).
    message(STATUS "opgraph: CUDA backend off: nvcc is here, but ${why}")
    set(OPGRAPH_WITH_CUDA OFF)
  else()
    message(STATUS "opgraph: CUDA backend on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures "
                   "${CMAKE_CUDA_ARCHITECTURES}, cuBLASLt ${CUBLASLT_LIBRARY})")
  endif()
else()
  message(STATUS "opgraph: CUDA backend off")
endif()
