// backend/cuda/small_n_linear.h — launchers of the small-n linear family: out = x · Wᵀ (+ bias)
// for the decode case (n <= 16 token rows), where the matmul is a stream over the weights and
// cuBLAS leaves half the memory bandwidth unused; and the fp32 bias add that follows a cuBLASLt
// matmul with F32 output.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/input_norm.h"
#include "backend/cuda/linear_outputs.h"
#include "backend/cuda/qkv_rope.h"

namespace fg::cuda {

// The most token rows the small-n kernel takes (the m16 side of one tensor-core tile).
inline constexpr int64_t kSmallNMaxRows = 16;

// Warps per block for a weight of out_features rows on a device of sm_count multiprocessors: a
// function of the shape alone (never of n), since the warps split the reduction over `in` and
// so fix its order. Chosen so that the blocks fill the device about once.
int small_n_linear_warps(int64_t out_features, int sm_count);

// out[i, j] = sum_k x[i, k] * w[j, k] (+ bias[j]), fp32 accumulation, bias added in fp32, one
// rounding to the output type. x [n, in] BF16 with 1 <= n <= 16; w [out_features, in] BF16;
// bias [out_features] BF16 or null; out: the [n, out_features] outputs, F32 when out_f32, else
// BF16, in one tensor or split by columns (linear_outputs.h). in % 8 == 0 and x, w 16-byte
// aligned. Each output's arithmetic is the same for every n and every split of the outputs.
void launch_small_n_linear(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* bias,
                           const LinearOutputs& out, bool out_f32, int64_t n, int64_t in, int64_t out_features,
                           int warps, cudaStream_t stream);

// Whether launch_small_n_linear_normed takes a weight of out_features rows: where the kernel's
// weights come through registers (more than one warp per block).
bool small_n_linear_takes_norm(int64_t out_features, int sm_count);

// launch_small_n_linear of rms_norm(x) (input_norm.h), BF16 out; warps = small_n_linear_warps(),
// with small_n_linear_takes_norm.
void launch_small_n_linear_normed(const __nv_bfloat16* x, const InputNorm& norm, const __nv_bfloat16* w,
                                  const __nv_bfloat16* bias, const LinearOutputs& out, int64_t n, int64_t in,
                                  int64_t out_features, int warps, cudaStream_t stream);

// launch_small_n_linear_normed over a q/k/v span (out: its three parts, q and k whole heads of
// rope.head_dim, a multiple of 16) that also rotates q and k by RoPE and writes k and v to the
// cache slots of their tokens (qkv_rope.h): the bits of the normed linear, then
// launch_rope_and_cache_write.
void launch_small_n_qkv_rope(const __nv_bfloat16* x, const InputNorm& norm, const __nv_bfloat16* w,
                             const __nv_bfloat16* bias, const LinearOutputs& out, const QkvRope& rope, int64_t n,
                             int64_t in, int64_t out_features, int warps, cudaStream_t stream);

// out[i, j] += bias[j] in fp32. out [n, out_features] F32, bias [out_features] BF16.
void launch_add_bias_f32(float* out, const __nv_bfloat16* bias, int64_t n, int64_t out_features,
                         cudaStream_t stream);

}  // namespace fg::cuda
