// backend/cuda/fp8_gemm_epilogue.cu — the per-token and per-channel scales (and the bias, or the
// residual add) of FP8 linears past the decode rows, applied to cuBLASLt's unscaled FP8 GEMM
// output: one elementwise pass over the [n, out_features] sums.
#include <cuda_bf16.h>

#include <algorithm>

#include "backend/cuda/fp8_kernels.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/pdl.cuh"

namespace fg::cuda {

namespace {

// One thread per pair of columns (j, j + 1) of one row.
__global__ void fp8_scale_outputs_kernel(const __nv_bfloat16* sums, const float* __restrict__ x_scales,
                                         const float* __restrict__ w_scales, const __nv_bfloat16* __restrict__ bias,
                                         const LinearOutputs out, int64_t n, int64_t out_features) {
  allow_dependent_grids();
  wait_for_prerequisite_grids();
  const int64_t pairs = out_features / 2;
  const bool paired = out.pairs_fit();
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < n * pairs;
       p += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int row = static_cast<int>(p / pairs);
    const int64_t column = 2 * (p % pairs);
    const __nv_bfloat162 sum = *reinterpret_cast<const __nv_bfloat162*>(sums + row * out_features + column);
    const float x_scale = x_scales[row];
    float value[2] = {__fmul_rn(__fmul_rn(__bfloat162float(sum.x), x_scale), w_scales[column]),
                      __fmul_rn(__fmul_rn(__bfloat162float(sum.y), x_scale), w_scales[column + 1])};
    if (bias != nullptr) {
      value[0] = __fadd_rn(value[0], __bfloat162float(bias[column]));
      value[1] = __fadd_rn(value[1], __bfloat162float(bias[column + 1]));
    }
    out.put_neighbours<__nv_bfloat16>(row, column, out_features, value[0], value[1], paired);
  }
}

}  // namespace

void launch_fp8_scale_outputs(const __nv_bfloat16* sums, const float* x_scales, const float* w_scales,
                              const __nv_bfloat16* bias, const LinearOutputs& out, int64_t n, int64_t out_features,
                              cudaStream_t stream) {
  const int64_t pairs = n * (out_features / 2);
  if (pairs == 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((pairs + kThreads - 1) / kThreads, 65535);
  launch_with_pdl(fp8_scale_outputs_kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, sums,
                  x_scales, w_scales, bias, out, n, out_features);
}

}  // namespace fg::cuda
