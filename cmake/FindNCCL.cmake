# FindNCCL: NVIDIA's collective library, which ships no CMake package of its own.
#
# Looks in the CUDA toolkit's directories first (CUDAToolkit_INCLUDE_DIRS /
# CUDAToolkit_LIBRARY_DIR when find_package(CUDAToolkit) ran), then NCCL_HOME, then the usual
# prefixes. Defines:
#   NCCL_FOUND, NCCL_INCLUDE_DIR, NCCL_LIBRARY, NCCL_VERSION (from nccl.h, when readable)
#   NCCL::NCCL  imported target (include directory and library)
find_path(NCCL_INCLUDE_DIR nccl.h
          HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME PATH_SUFFIXES include
          PATHS /usr/local/cuda /usr/local/nccl /opt/nccl /usr)
find_library(NCCL_LIBRARY nccl
             HINTS ${CUDAToolkit_LIBRARY_DIR} ENV NCCL_HOME PATH_SUFFIXES lib64 lib
             PATHS /usr/local/cuda /usr/local/nccl /opt/nccl /usr)
if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_version_lines
       REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) [0-9]+")
  foreach(part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*#define NCCL_${part} ([0-9]+).*" "\\1" _nccl_${part}
                         "${_nccl_version_lines}")
  endforeach()
  if(_nccl_MAJOR MATCHES "^[0-9]+$")
    set(NCCL_VERSION "${_nccl_MAJOR}.${_nccl_MINOR}.${_nccl_PATCH}")
  endif()
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR
                                  VERSION_VAR NCCL_VERSION)
if(NCCL_FOUND AND NOT TARGET NCCL::NCCL)
  add_library(NCCL::NCCL UNKNOWN IMPORTED)
  set_target_properties(NCCL::NCCL PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                                              INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
