// backend/cuda/weight_loads.cuh — how the direct decode linears (small_n_linear.cu,
// fp8_small_n_linear.cu) read their weights, which no kernel writes and each reads exactly once.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fg::cuda {

// 16 bytes of weights: kept out of L1 (which holds the token rows every block reads again), with
// L2 fetching the 128-byte line around the load, since the neighbouring lanes' k-steps follow. 128
// rather than 256 (bench/RESULTS.md, 2026-12-01): 1-3% faster on the BF16 q/k/v/o shapes, 2-10% on
// the large ones; no hint at all is slower than either. Volatile, so that the compiler keeps the
// loads where they are written: before the PDL wait where a kernel issues them early.
__device__ __forceinline__ uint4 load_weights(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::128B.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Asks L2 for the 128-byte line holding p; no register waits on it.
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

}  // namespace fg::cuda
