# cmake/cutlass.cmake — CUTLASS's headers (BSD-3-Clause) as the interface target fg_cutlass, for the
# CUDA backend's Hopper FP8 GEMM. They come from NVIDIA's published package, the nvidia-cutlass
# wheel, which scripts/setup.sh fetches with pip into third_party/downloads/ and checks against the
# sha256 below; only the two header trees are extracted (cute/ and cutlass/, and the util headers).
set(FG_CUTLASS_VERSION 4.2.0.0)
set(FG_CUTLASS_SHA256 f9599ada45c7bcb6bf53f7d3f0a7d154183e53451c01bfa59eecd37dd4a693f6)
set(FG_CUTLASS_WHEEL "${CMAKE_SOURCE_DIR}/third_party/downloads/nvidia_cutlass-${FG_CUTLASS_VERSION}-py3-none-any.whl"
    CACHE FILEPATH "the nvidia-cutlass wheel (fetched by scripts/setup.sh)")

if(NOT EXISTS "${FG_CUTLASS_WHEEL}")
  message(FATAL_ERROR "fullgraph's CUDA backend needs CUTLASS ${FG_CUTLASS_VERSION}'s headers, and "
          "${FG_CUTLASS_WHEEL} does not exist: run scripts/setup.sh (it fetches the wheel with pip and checks "
          "its sha256), or point -DFG_CUTLASS_WHEEL=... at a copy")
endif()

set(FG_CUTLASS_ROOT "${CMAKE_BINARY_DIR}/_deps/cutlass_library/source")
include(${CMAKE_SOURCE_DIR}/cmake/pinned_archive.cmake)
fg_extract_pinned(cutlass "${FG_CUTLASS_WHEEL}" ${FG_CUTLASS_SHA256} "nvidia-cutlass ${FG_CUTLASS_VERSION}"
                  "${CMAKE_BINARY_DIR}/_deps/cutlass_library"
                  "cutlass_library/source/include" "cutlass_library/source/tools/util/include"
                  "nvidia_cutlass-${FG_CUTLASS_VERSION}.dist-info/licenses/LICENSE.txt")

add_library(fg_cutlass INTERFACE)
# Not fullgraph's code: its headers are system headers, so their warnings are not ours to fix.
target_include_directories(fg_cutlass SYSTEM INTERFACE "${FG_CUTLASS_ROOT}/include"
                           "${FG_CUTLASS_ROOT}/tools/util/include")
