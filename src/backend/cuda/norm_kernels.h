// backend/cuda/norm_kernels.h — launchers of the RMSNorm family: plain RMSNorm, the residual add
// fused with RMSNorm, and the per-head q/k RMSNorm of Qwen3. bf16 storage, fp32 arithmetic.
//
// Launchers trust their arguments; CudaBackend checks shapes and dtypes (with messages) first.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace fg::cuda {

// Widest row the row kernels hold in registers: 1024 threads x 4 vectors of 8.
inline constexpr int64_t kMaxNormHidden = 32768;

// out[r] = x[r] / rms(x[r]) * weight. x, out [rows, hidden]; weight [hidden]; hidden % 8 == 0.
void launch_rms_norm(const __nv_bfloat16* x, const __nv_bfloat16* weight, float eps, __nv_bfloat16* out,
                     int64_t rows, int64_t hidden, cudaStream_t stream);

// residual[r] = bf16(residual[r] + x[r]); out[r] = rms_norm(residual[r]). The add is done in fp32
// and rounded once; the norm reads the rounded residual, the value the next layer also sees.
void launch_add_rms_norm(__nv_bfloat16* residual, const __nv_bfloat16* x, const __nv_bfloat16* weight, float eps,
                         __nv_bfloat16* out, int64_t rows, int64_t hidden, cudaStream_t stream);

// In place: every head_dim-wide row of x (rows = tokens * heads) normalised and scaled by weight
// [head_dim]. head_dim / 8 must be a power of two of at most 32 (head_dim 16 .. 256).
void launch_head_rms_norm(__nv_bfloat16* x, const __nv_bfloat16* weight, float eps, int64_t rows, int64_t head_dim,
                          cudaStream_t stream);

}  // namespace fg::cuda
