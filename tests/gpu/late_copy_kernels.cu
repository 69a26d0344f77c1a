// tests/gpu/late_copy_kernels.cu — the late copy (late_copy_kernels.h).
#include "gpu/late_copy_kernels.h"

#include "core/cuda/cuda_check.h"
#include "core/cuda/pdl.cuh"

namespace fg::gpu_test {
namespace {

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

__global__ void late_copy_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, int64_t count,
                                 int64_t delay_ns) {
  cuda::allow_dependent_grids();
  cuda::wait_for_prerequisite_grids();
  const uint64_t start = global_ns();
  while (global_ns() - start < static_cast<uint64_t>(delay_ns)) {
  }
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

}  // namespace

void launch_late_copy(void* dst, const void* src, int64_t bytes, int64_t delay_ns, cudaStream_t stream) {
  if (bytes % 16 != 0 || reinterpret_cast<uintptr_t>(dst) % 16 != 0 || reinterpret_cast<uintptr_t>(src) % 16 != 0)
    FG_CUDA_CHECK(cudaErrorInvalidValue);
  // Few blocks, so that the dependent finds room on the SMs while this grid spins.
  cuda::launch_with_pdl(late_copy_kernel, dim3(8), dim3(256), 0, stream, static_cast<uint4*>(dst),
                        static_cast<const uint4*>(src), bytes / 16, delay_ns);
}

}  // namespace fg::gpu_test
