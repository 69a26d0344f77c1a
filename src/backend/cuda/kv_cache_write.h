// backend/cuda/kv_cache_write.h — the paged KV cache as the kernels that write it see it: BF16, or
// e4m3 (--kv-cache-dtype fp8) holding e4m3(clamp(value / scale)) per layer scale (e4m3_vec.cuh:
// the CPU backend's cache write, cpu_attention.cpp). The kernels round the
// value to BF16 first (what they would store in a BF16 cache), then to e4m3.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#ifdef __CUDACC__
#include "backend/cuda/bf16_vec.cuh"
#include "backend/cuda/e4m3_vec.cuh"
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
    float x[8];
    unpack_bf16x8(values, x);
    *reinterpret_cast<uint2*>(static_cast<uint8_t*>(cache) + index) = quantize8(x, to_k ? k_scale : v_scale);
  }
#endif
};

}  // namespace fg::cuda
