// attention/cuda/reference_attention_kernel.h — launcher of the reference attention kernel (the
// backend object around it is in reference_attention.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace fg::cuda {

// One warp per (token, head). q, out [n, num_heads * head_dim]; caches [num_blocks, block_size,
// num_kv_heads, head_dim]; query_start_loc [num_reqs + 1], seq_lens [num_reqs], block_table
// [num_reqs, max_blocks] (I32). head_dim <= 256. Tokens owned by no request are not written.
// The caches hold BF16, or e4m3 (kv.fp8) read as value * scale in fp32, as the CPU backend reads them.
struct KvCacheRead {
  const void* k;
  const void* v;
  bool fp8 = false;
  float k_scale = 1.0f, v_scale = 1.0f;
};
void launch_reference_attention(const __nv_bfloat16* q, const KvCacheRead& kv, const int32_t* query_start_loc,
                                const int32_t* seq_lens, const int32_t* block_table, int64_t n, int num_reqs,
                                int max_blocks, int block_size, int num_heads, int num_kv_heads, int head_dim,
                                float scale, __nv_bfloat16* out, cudaStream_t stream);

}  // namespace fg::cuda
