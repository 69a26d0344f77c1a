// backend/cuda/activation_kernels.h — launchers of the elementwise kernels between matmuls.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace fg::cuda {

// out = silu(gate) * up elementwise over `count` elements (a multiple of 8; 16-byte aligned),
// computed in fp32 and rounded once.
void launch_silu_mul(const __nv_bfloat16* gate, const __nv_bfloat16* up, __nv_bfloat16* out, int64_t count,
                     cudaStream_t stream);

// residual += x elementwise over `count` elements (a multiple of 8; 16-byte aligned), the sum in
// fp32 rounded once (the add of launch_add_rms_norm).
void launch_add(__nv_bfloat16* residual, const __nv_bfloat16* x, int64_t count, cudaStream_t stream);

}  // namespace fg::cuda
