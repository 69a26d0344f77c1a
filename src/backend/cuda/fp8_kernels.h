// backend/cuda/fp8_kernels.h — the FP8 (e4m3) kernels of FP8 checkpoints on the GPU: rounding
// activation rows to e4m3 with a scale per row (alone, or fused into the RMSNorm and the
// SiLU-and-multiply that produce them), quantizing a weight per output channel, and the decode
// linear (n <= 16 token rows) over e4m3 weights with per-channel scales.
//
// Activation quantization of one row v[0..K) (bf16 values; in the fused kernels, the bf16 values
// the unfused kernel would have stored): the row's scale s is static_scale when it is positive,
// else max_k |v_k| / 448 in fp32 (1 where that is 0); q_k = e4m3(v_k / s), the division in IEEE
// fp32, the rounding to nearest even with saturation to ±448 (fg::float_to_e4m3 of the value
// clamped to ±448). scales[row] = s. This is CpuBackend's quantize_fp8, bit for bit.
//
// Launchers trust their arguments; CudaBackend checks shapes and dtypes (with messages) first.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/linear_outputs.h"

namespace fg::cuda {

// The quantized rows of one activation tensor: e4m3 bytes [rows, width] and an fp32 scale per row.
struct Fp8RowsView {
  uint8_t* values;
  float* scales;
};

// Quantizes rows [rows, width] of x (width % 16 == 0, 16-byte aligned). static_scale <= 0: a scale
// per row from its max.
void launch_quantize_fp8_rows(const __nv_bfloat16* x, float static_scale, Fp8RowsView out, int64_t rows,
                              int64_t width, cudaStream_t stream);

// launch_rms_norm (norm_kernels.h) of x with weight, its bf16 output quantized as above instead of
// stored. hidden % 16 == 0, at most kMaxNormHidden.
void launch_rms_norm_quantize_fp8(const __nv_bfloat16* x, const __nv_bfloat16* weight, float eps, float static_scale,
                                  Fp8RowsView out, int64_t rows, int64_t hidden, cudaStream_t stream);

// launch_silu_mul_rows (activation_kernels.h) of gate and up (rows of `width`, in_stride apart),
// its bf16 output quantized as above instead of stored. width % 16 == 0.
void launch_silu_mul_quantize_fp8(const __nv_bfloat16* gate, const __nv_bfloat16* up, int64_t in_stride,
                                  float static_scale, Fp8RowsView out, int64_t rows, int64_t width,
                                  cudaStream_t stream);

// A weight w [out_features, in] (bf16) quantized per output channel: scales[j] = max_k |w[j, k]|
// / 448 (1 where 0), q[j, k] = e4m3(w[j, k] / scales[j]) as above. in % 16 == 0.
void launch_quantize_weight_fp8(const __nv_bfloat16* w, uint8_t* q, float* scales, int64_t out_features, int64_t in,
                                cudaStream_t stream);

// The most token rows the FP8 decode linear takes.
inline constexpr int64_t kFp8SmallNMaxRows = 16;

// out[i, j] = (sum_k x[i, k] * w[j, k]) * x_scales[i] * w_scales[j] (+ bias[j]), the products of
// e4m3 values exact, summed in fp32, the scales applied in that order in fp32, the bias added in
// fp32, one rounding to bf16 (or, with out.add_to_output, that rounded value added to what the
// output holds and rounded again, as LinearOutputs::put does). x [n, in] e4m3 (1 <= n <= 16) with
// x_scales [n]; w [out_features, in] e4m3 with w_scales [out_features]; bias [out_features] bf16
// or null; in % 16 == 0; x and w 16-byte aligned. A row's bits do not depend on n (the order of
// every sum is a function of `in` and `out_features` alone), so graph and eager runs agree.
void launch_fp8_small_n_linear(const uint8_t* x, const float* x_scales, const uint8_t* w, const float* w_scales,
                               const __nv_bfloat16* bias, const LinearOutputs& out, int64_t n, int64_t in,
                               int64_t out_features, int sm_count, cudaStream_t stream);

// The scaling of an FP8 linear whose sums a GEMM left unscaled (CublasLtLinear::run_fp8): each
// output (i, j) of `out` gets sums[i, j] * x_scales[i] * w_scales[j] (+ bias[j]), in fp32 in that
// order, rounded once to bf16 and stored (or added, out.add_to_output) as LinearOutputs::put does.
// sums BF16 [n, out_features] may be one of out's parts itself (each element is read, then
// written, by one thread). out_features % 2 == 0.
void launch_fp8_scale_outputs(const __nv_bfloat16* sums, const float* x_scales, const float* w_scales,
                              const __nv_bfloat16* bias, const LinearOutputs& out, int64_t n, int64_t out_features,
                              cudaStream_t stream);

}  // namespace fg::cuda
