// backend/cuda/input_norm.h — the RMSNorm a small-n linear applies to its input rows inside the
// matmul (CudaBackend::rms_norm_linear_group and rms_norm_linear_silu_mul).
//
// out[i, j] = rms_norm(x[i]) · w[j] = (1 / rms(x[i])) · sum_k w[j, k] · (g[k] · x[i, k]): the kernels
// feed bf16(g ⊙ x) to the tensor cores, build each row's sum of squares from the same token
// fragments (every block loads the whole rows anyway), and scale the fp32 sums by 1 / rms before
// the bias and the one rounding. Against a norm kernel then the matmul, the roundings move: the
// normed row is rounded to BF16 once either way, here before the 1 / rms rather than after it.
// What it saves is the norm kernel itself, a kernel's latency in each decode step's chain.
//
// The sum of squares visits k in the matmul's own order, which depends on the weight's shape
// alone: every n gives a row the same bits (DESIGN.md rule 7).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace fg::cuda {

struct InputNorm {
  const __nv_bfloat16* weight = nullptr;  // g [in]; null: the rows go in as they are
  float eps = 0.0f;

  bool enabled() const { return weight != nullptr; }
};

#ifdef __CUDACC__
// Eight values of a token row h (one 16-byte fragment) and the norm weight g at the same k:
// returns bf16(g ⊙ h) (bf16 multiplies round the exact product once) and adds sum h² to sum_sq.
// (Measured alternatives, bench/RESULTS.md, 2026-12-01: the squares summed as a tree,
// no faster; on the tensor cores, with the fragments as both operands, 1B q/k/v 6.1 -> 8.7 us,
// the accumulator chaining every mma.)
__device__ __forceinline__ uint4 apply_norm_weight(const uint4& h, const uint4& g, float& sum_sq) {
  const uint32_t hw[4] = {h.x, h.y, h.z, h.w};
  const uint32_t gw[4] = {g.x, g.y, g.z, g.w};
  uint32_t out[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float lo = __uint_as_float(hw[i] << 16), hi = __uint_as_float(hw[i] & 0xffff0000u);
    sum_sq = fmaf(lo, lo, sum_sq);
    sum_sq = fmaf(hi, hi, sum_sq);
    const __nv_bfloat162 product =
        __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&hw[i]), *reinterpret_cast<const __nv_bfloat162*>(&gw[i]));
    out[i] = *reinterpret_cast<const uint32_t*>(&product);
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// A warp's sums of squares of token rows g and g + 8 (lane (g, t) holds the k-steps' values at
// 8 t.. of both) into warp_row_sums[g] and [g + 8]: the four lanes of a row meet first.
__device__ __forceinline__ void store_warp_row_sums(float sum_sq_lo, float sum_sq_hi, float (&warp_row_sums)[16],
                                                    int g, int t) {
#pragma unroll
  for (int mask = 1; mask <= 2; mask <<= 1) {
    sum_sq_lo += __shfl_xor_sync(0xffffffffu, sum_sq_lo, mask);
    sum_sq_hi += __shfl_xor_sync(0xffffffffu, sum_sq_hi, mask);
  }
  if (t == 0) {
    warp_row_sums[g] = sum_sq_lo;
    warp_row_sums[g + 8] = sum_sq_hi;
  }
}

// 1 / rms of token rows g and g + 8 of `in` values from the warps' sums (store_warp_row_sums),
// added in warp order.
__device__ __forceinline__ void row_scales(const float (*row_sums)[16], int warps, int g, int in, float eps,
                                           float (&scale)[2]) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float sum_sq = row_sums[0][g + 8 * half];
    for (int other = 1; other < warps; ++other) sum_sq += row_sums[other][g + 8 * half];
    scale[half] = rsqrtf(sum_sq / static_cast<float>(in) + eps);
  }
}
#endif

}  // namespace fg::cuda
