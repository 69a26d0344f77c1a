// backend/cuda/streaming_load.cuh — the 16-byte weight load of the read-only kernel
// (read_kernels.cu): read-only, around L1, 128-byte L2 lines, as the direct matmul's loads.
// Volatile, unlike the matmul's: the loads must stay where the kernel puts them (before its wait).
#pragma once

#include <cuda_runtime.h>

namespace fg::cuda {

__device__ __forceinline__ uint4 load_streaming(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::128B.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

}  // namespace fg::cuda
