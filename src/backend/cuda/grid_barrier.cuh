// backend/cuda/grid_barrier.cuh — the grid-wide barrier of the resident (persistent) probe kernels
// (phase_read_kernels.cu, gemv_chain_kernels.cu): every block adds one to a counter after a phase,
// and a block starts the next phase once the counter holds every block's arrivals so far.
// Release/acquire at GPU scope, so that what a phase wrote is visible to every block after it.
// Only for grids whose blocks are all resident at once (a waiting block would otherwise wait for a
// block that never starts): the launchers check the occupancy first.
#pragma once

#include <cuda_runtime.h>

namespace fg::cuda {

// This block's arrival, once all its threads are done with the phase.
__device__ __forceinline__ void grid_barrier_arrive(unsigned* count) {
  __syncthreads();
  if (threadIdx.x == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(count) : "memory");
}

// Returns once *count >= target (thread 0 polls; the block's threads meet after it).
__device__ __forceinline__ void grid_barrier_wait(const unsigned* count, unsigned target) {
  if (threadIdx.x == 0) {
    unsigned seen = 0;
    do {
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(count) : "memory");
    } while (seen < target);
  }
  __syncthreads();
}

}  // namespace fg::cuda
