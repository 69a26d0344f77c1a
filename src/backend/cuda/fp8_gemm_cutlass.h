// backend/cuda/fp8_gemm_cutlass.h — the FP8 linear past the decode rows (prefill and large decode
// batches): CUTLASS's Hopper FP8 GEMM (TMA, warp-specialized wgmma) with the per-token and
// per-channel scales, the bias and the residual add in its epilogue, so the [n, out_features]
// output is written once. One tile configuration for every n, no split-K: a row's arithmetic is a
// function of `in` and `out_features` alone, so graph and eager runs of any n agree bit for bit.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace fg::cuda {

// out[i, j] = (sum_k x[i, k] * w[j, k]) * x_scales[i] * w_scales[j] (+ bias[j]): the products of
// e4m3 values exact, summed over all of k in wgmma's FP8 accumulator (CUTLASS's "FP8 fast
// accumulation": about 14 bits of the partial sum kept at each wgmma, no promotion into fp32
// between k blocks; vLLM's CUTLASS FP8 GEMM on Hopper accumulates so too), the scales applied in
// that order in fp32, the bias added in fp32, one rounding to bf16. add_to_output (no bias):
// out[i, j] = bf16(out[i, j] + that rounded value), as LinearOutputs::put adds. x [n, in] e4m3 with
// x_scales [n]; w [out_features, in] e4m3 with w_scales [out_features]; bias [out_features] bf16
// or null; out [n, out_features] bf16; in % 16 == 0, out_features % 8 == 0, every pointer 16-byte
// aligned. sm_count: the device's SMs (the persistent grid's size).
void launch_fp8_gemm_scaled(const uint8_t* x, const float* x_scales, const uint8_t* w, const float* w_scales,
                            const __nv_bfloat16* bias, __nv_bfloat16* out, bool add_to_output, int64_t n, int64_t in,
                            int64_t out_features, int sm_count, cudaStream_t stream);

}  // namespace fg::cuda
