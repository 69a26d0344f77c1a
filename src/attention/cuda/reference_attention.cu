// attention/cuda/reference_attention.cu — the reference attention kernel and its launcher (see
// reference_attention.h). Everything a kernel needs per step comes from device tensors.
#include <cuda_fp8.h>

#include "attention/cuda/reference_attention_kernel.h"
#include "core/cuda/cuda_check.h"

namespace fg::cuda {

namespace {

constexpr int kMaxDimsPerLane = 8;  // head_dim <= 256

__device__ __forceinline__ float cache_value(const void* cache, int64_t index, bool fp8, float scale) {
  if (!fp8) return __bfloat162float(static_cast<const __nv_bfloat16*>(cache)[index]);
  const auto byte = static_cast<const __nv_fp8_storage_t*>(cache)[index];
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(byte, __NV_E4M3))) * scale;
}

__global__ void __launch_bounds__(32) reference_attention_kernel(
    const __nv_bfloat16* __restrict__ q, const KvCacheRead kv, const int32_t* __restrict__ query_start_loc,
    const int32_t* __restrict__ seq_lens, const int32_t* __restrict__ block_table, int num_reqs, int max_blocks,
    int block_size, int num_heads, int num_kv_heads, int head_dim, float scale, __nv_bfloat16* __restrict__ out) {
  const int token = blockIdx.x, head = blockIdx.y, lane = threadIdx.x;

  // The request that owns this token; none for tokens past the real ones (padding).
  int r = 0;
  while (r < num_reqs && !(token >= query_start_loc[r] && token < query_start_loc[r + 1])) ++r;
  if (r == num_reqs) return;
  const int num_query = query_start_loc[r + 1] - query_start_loc[r];
  const int visible = seq_lens[r] - num_query + (token - query_start_loc[r]) + 1;  // causal horizon
  const int kv_head = head / (num_heads / num_kv_heads);
  const int32_t* blocks = block_table + static_cast<int64_t>(r) * max_blocks;

  // Lane owns dims lane, lane + 32, ...
  const __nv_bfloat16* q_row = q + (static_cast<int64_t>(token) * num_heads + head) * head_dim;
  float qv[kMaxDimsPerLane], acc[kMaxDimsPerLane];
#pragma unroll
  for (int i = 0; i < kMaxDimsPerLane; ++i) {
    const int d = lane + 32 * i;
    qv[i] = d < head_dim ? __bfloat162float(q_row[d]) : 0.0f;
    acc[i] = 0.0f;
  }
  float max_score = -INFINITY, denominator = 0.0f;
  for (int t = 0; t < visible; ++t) {
    const int64_t slot = static_cast<int64_t>(blocks[t / block_size]) * block_size + t % block_size;
    const int64_t offset = (slot * num_kv_heads + kv_head) * head_dim;
    float dot = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxDimsPerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < head_dim) dot += qv[i] * cache_value(kv.k, offset + d, kv.fp8, kv.k_scale);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
    const float score = dot * scale;
    const float new_max = fmaxf(max_score, score);
    const float rescale = expf(max_score - new_max);  // 0 on the first position
    const float p = expf(score - new_max);
    denominator = denominator * rescale + p;
#pragma unroll
    for (int i = 0; i < kMaxDimsPerLane; ++i) {
      const int d = lane + 32 * i;
      const float v = d < head_dim ? cache_value(kv.v, offset + d, kv.fp8, kv.v_scale) : 0.0f;
      acc[i] = acc[i] * rescale + p * v;
    }
    max_score = new_max;
  }
  __nv_bfloat16* out_row = out + (static_cast<int64_t>(token) * num_heads + head) * head_dim;
#pragma unroll
  for (int i = 0; i < kMaxDimsPerLane; ++i) {
    const int d = lane + 32 * i;
    if (d < head_dim) out_row[d] = __float2bfloat16_rn(visible > 0 ? acc[i] / denominator : 0.0f);
  }
}

}  // namespace

void launch_reference_attention(const __nv_bfloat16* q, const KvCacheRead& kv, const int32_t* query_start_loc, const int32_t* seq_lens, const int32_t* block_table,
                                int64_t n, int num_reqs, int max_blocks, int block_size, int num_heads,
                                int num_kv_heads, int head_dim, float scale, __nv_bfloat16* out, cudaStream_t stream) {
  if (n == 0 || num_heads == 0) return;
  reference_attention_kernel<<<dim3(static_cast<unsigned>(n), static_cast<unsigned>(num_heads)), 32, 0, stream>>>(
      q, kv, query_start_loc, seq_lens, block_table, num_reqs, max_blocks, block_size, num_heads,
      num_kv_heads, head_dim, scale, out);
  FG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fg::cuda
