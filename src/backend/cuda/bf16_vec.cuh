// backend/cuda/bf16_vec.cuh — device helpers shared by the kernel families: 16-byte vectors of
// eight bf16 converted to and from fp32, and warp/block sums with a fixed order.
//
// Every kernel stores bf16 and computes in fp32; conversions round to nearest even, as
// fg::float_to_bf16 and PyTorch do. The sums reduce in an order fixed by the launch shape alone,
// so a row's result never depends on how many rows a step has (DESIGN.md rule 7).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace fg::cuda {

using bf16 = __nv_bfloat16;

// Eight bf16 (one 16-byte load) to fp32.
__device__ __forceinline__ void unpack_bf16x8(const uint4& v, float (&f)[8]) {
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    // bf16 -> fp32 is a shift: the low half is the element with the lower index.
    f[2 * i] = __uint_as_float(words[i] << 16);
    f[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
  }
}

// Eight fp32 to bf16 (round to nearest even), packed for one 16-byte store.
__device__ __forceinline__ uint4 pack_bf16x8(const float (&f)[8]) {
  uint32_t words[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const __nv_bfloat162 pair = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
    words[i] = *reinterpret_cast<const uint32_t*>(&pair);
  }
  return make_uint4(words[0], words[1], words[2], words[3]);
}

__device__ __forceinline__ float bf16_round(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }

// Sum over the 32 lanes of a warp; every lane gets the result (butterfly: fixed order).
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// Sum over a block of blockDim.x threads (a multiple of 32, at most 1024); every thread gets the
// result. `scratch` holds 32 floats of shared memory. Lanes first, then warps in index order.
__device__ __forceinline__ float block_sum(float x, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  x = warp_sum(x);
  if (warps == 1) return x;
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < warps; ++w) total += scratch[w];
  __syncthreads();  // scratch may be reused by the caller's next block_sum
  return total;
}

}  // namespace fg::cuda
