// core/cuda/pdl.cuh — programmatic dependent launch (PDL, sm_90): the launch and the device side.
//
// A kernel launched with cudaLaunchAttributeProgrammaticStreamSerialization may start before the
// previous kernel in its stream has finished, once that kernel's blocks have all called
// allow_dependent_grids() or exited. It must call wait_for_prerequisite_grids() before it reads
// anything the previous kernel writes, or writes anything it reads. Without the attribute both are
// no-ops, so a kernel may call them whichever way it is launched.
//
// No load of what an earlier kernel writes may run before the wait, and source order does not
// ensure it: ptxas treats ld.global.nc data (__ldg, and what the compiler emits for `const T*
// __restrict__`) as constant for the grid's whole life and may schedule such loads ahead of
// griddepcontrol.wait. It did so in fp8_small_n_linear's two-tile kernel, which then read token
// rows the quantizer had not yet written. So the rows the decode linears stream and the FP8 KV
// rows are read with load_written_16 / _8 below (coherent, kept behind the wait). Other kernels
// still read their inputs through `const __restrict__` after the wait, which ptxas has kept there;
// scripts/cuda/pdl_load_audit.py lists, from the SASS, every load a kernel may issue before its
// wait, and is the check after a kernel change.
//
// The wait covers the previous grid only. So that the chain stays ordered (a kernel may read what
// a grid two back wrote), every block of a kernel launched with PDL waits before it exits, early
// exits included: then a grid's completion implies its predecessor's. The decode chain's kernels
// (linears, norms, RoPE + cache write, attention, SiLU-and-multiply, gathers) all are.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "core/cuda/cuda_check.h"

namespace fg::cuda {

// Launches `kernel` on `stream` with the PDL attribute; graphs captured from the stream keep it
// as a programmatic edge.
template <typename... Params, typename... Args>
void launch_with_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                     Args&&... args) {
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = 1;
  FG_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

// Returns once the grids this one depends on have completed and their writes are visible.
__device__ __forceinline__ void wait_for_prerequisite_grids() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

// Lets this grid's PDL dependents launch (they take SM room only as this grid's blocks leave, and
// their own wait still orders them after this grid's completion).
__device__ __forceinline__ void allow_dependent_grids() { asm volatile("griddepcontrol.launch_dependents;"); }

// 16, 8 and 4 bytes of what an earlier kernel of the chain wrote, after the wait: ld.global (cached
// in L1, coherent), which ptxas keeps behind griddepcontrol.wait. The "memory" clobber keeps the
// compiler from moving it there either.
__device__ __forceinline__ uint4 load_written_16(const void* p) {
  uint4 v;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}
__device__ __forceinline__ float load_written_f32(const float* p) {
  float v;
  asm volatile("ld.global.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
  return v;
}

}  // namespace fg::cuda
