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
// The same over `rows` rows of `width` elements whose gate and up rows lie `in_stride` elements
// apart (out's rows are contiguous): the halves of one gate/up matmul output [rows, 2 * width]
// with gate = that output, up = gate + width, in_stride = 2 * width. width and in_stride are
// multiples of 8.
void launch_silu_mul_rows(const __nv_bfloat16* gate, const __nv_bfloat16* up, __nv_bfloat16* out, int64_t rows,
                          int64_t width, int64_t in_stride, cudaStream_t stream);

// residual += x elementwise over `count` elements (a multiple of 8; 16-byte aligned), the sum in
// fp32 rounded once (the add of launch_add_rms_norm).
void launch_add(__nv_bfloat16* residual, const __nv_bfloat16* x, int64_t count, cudaStream_t stream);

}  // namespace fg::cuda
