// backend/cuda/rope_kernels.h — launcher of RoPE fused with the paged KV-cache write.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/kv_cache_write.h"

namespace fg::cuda {

// Where RoPE reads a token's q, k and v: the outputs themselves (in place), or the columns of one
// q/k/v matmul output [n, q + 2 kv] (a span, as one GEMM over the parts' weights writes it).
// Strides are elements between consecutive tokens' rows.
struct RopeSource {
  const __nv_bfloat16* q;
  const __nv_bfloat16* k;
  const __nv_bfloat16* v;
  int64_t q_stride, kv_stride;

  static RopeSource in_place(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, int64_t q_width,
                             int64_t kv_width) {
    return {q, k, v, q_width, kv_width};
  }
  static RopeSource span(const __nv_bfloat16* qkv, int64_t q_width, int64_t kv_width) {
    const int64_t width = q_width + 2 * kv_width;
    return {qkv, qkv + q_width, qkv + q_width + kv_width, width, width};
  }
};

// Per token i: rotates q[i] (num_heads heads) and k[i] (num_kv_heads heads), read from `src`, by
// the angles of positions[i] (rotate-half layout: element e pairs with e + head_dim/2) into q[i]
// and k[i]; copies v[i] from `src` unless it is read in place; then, when
// 0 <= slot_mapping[i] < num_slots, writes the rotated k[i] and v[i] to that slot of the caches.
// q [n, num_heads * head_dim], k and v [n, num_kv_heads * head_dim]; positions I32 [n];
// slot_mapping I64 [n]; cos_sin F32 [max_positions, head_dim] (cos of the head_dim/2 frequencies,
// then their sin); the cache [num_slots, num_kv_heads, head_dim] (kv_cache_write.h). head_dim % 16 == 0; a
// span source must not overlap q, k or v.
// Positions outside [0, max_positions) are clamped so a bad value cannot read outside the table
// (the runner validates them in checked mode; the CPU backend rejects them).
void launch_rope_and_cache_write(const RopeSource& src, __nv_bfloat16* q, __nv_bfloat16* k, __nv_bfloat16* v,
                                 const int32_t* positions, const int64_t* slot_mapping, const float* cos_sin,
                                 const KvCacheWrite& cache, int64_t n, int num_heads, int num_kv_heads, int head_dim,
                                 int64_t max_positions, cudaStream_t stream);

// The q/k-norm models' (Qwen3) form of the same work: each q head normalized with q_norm and each k
// head with k_norm (head_rms_norm), then RoPE and the cache write as above, in place, with the bits
// of launch_head_rms_norm on q, on k, then launch_rope_and_cache_write. q_norm and k_norm
// [head_dim]; head_dim a power of two in [16, 256].
void launch_qk_norm_rope_and_cache_write(__nv_bfloat16* q, __nv_bfloat16* k, const __nv_bfloat16* v,
                                         const __nv_bfloat16* q_norm, const __nv_bfloat16* k_norm, float eps,
                                         const int32_t* positions, const int64_t* slot_mapping, const float* cos_sin,
                                         const KvCacheWrite& cache, int64_t n, int num_heads, int num_kv_heads,
                                         int head_dim, int64_t max_positions, cudaStream_t stream);

}  // namespace fg::cuda
