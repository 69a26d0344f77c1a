// backend/cuda/kv_cache_write.h — the paged KV cache as the kernels that write it see it: BF16, or
// e4m3 (--kv-cache-dtype fp8) holding e4m3(value / scale) per layer scale, rounded to nearest even
// with saturation to ±448 (the CPU backend's cache write, cpu_attention.cpp). The kernels round the
// value to BF16 first (what they would store in a BF16 cache), then to e4m3.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#ifdef __CUDACC__
#include <cuda_fp8.h>

#include "backend/cuda/bf16_vec.cuh"
#endif

namespace fg::cuda {

struct KvCacheWrite {
  void* k = nullptr;  // [num_slots, nkv * head_dim] of BF16, or of e4m3 bytes (fp8)
  void* v = nullptr;
  int64_t num_slots = 0;
  bool fp8 = false;
  float k_scale = 1.0f, v_scale = 1.0f;  // e4m3 caches only

#ifdef __CUDACC__
  // Eight consecutive elements of a slot (BF16 packed as one 16-byte vector) at element `index` of
  // the k or v cache: one 16-byte store, or one 8-byte store of their e4m3 rounding.
  __device__ __forceinline__ void store8(bool to_k, int64_t index, uint4 values) const {
    void* cache = to_k ? k : v;
    if (!fp8) {
      *reinterpret_cast<uint4*>(static_cast<__nv_bfloat16*>(cache) + index) = values;
      return;
    }
    const float scale = to_k ? k_scale : v_scale;
    float x[8];
    unpack_bf16x8(values, x);
    uint32_t words[2] = {0, 0};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 pair = make_float2(__fdiv_rn(x[2 * i], scale), __fdiv_rn(x[2 * i + 1], scale));
      words[i / 2] |= static_cast<uint32_t>(__nv_cvt_float2_to_fp8x2(pair, __NV_SATFINITE, __NV_E4M3)) << (16 * (i % 2));
    }
    *reinterpret_cast<uint2*>(static_cast<uint8_t*>(cache) + index) = make_uint2(words[0], words[1]);
  }
#endif
};

}  // namespace fg::cuda
