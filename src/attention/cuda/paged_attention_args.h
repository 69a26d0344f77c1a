// attention/cuda/paged_attention_args.h — the arguments every GPU paged-attention kernel reads:
// plain pointers and sizes, no Tensor (core/tensor.h pulls in fmt, which nvcc cannot compile).
// flash_attention_checks.h fills them from a run()'s tensors.
#pragma once

#include <cstdint>

namespace fg::attn {

struct PagedAttentionArgs {
  const void* q;          // BF16 [num_tokens, num_heads * head_dim]
  const void* k_cache;    // BF16 or e4m3 (kv_fp8) [num_blocks, block_size, num_kv_heads, head_dim]
  const void* v_cache;    // likewise
  const int* query_start_loc;  // I32 [num_reqs + 1], non-decreasing (contract)
  const int* seq_lens;    // I32 [num_reqs]
  const int* block_table;  // I32 [>= num_reqs, max_blocks]
  void* out;              // BF16 [num_tokens, num_heads * head_dim]
  int num_tokens;         // rows of q and out (the padded count under a graph)
  int num_reqs;           // entries of seq_lens (the padded count under a graph)
  int num_heads, num_kv_heads, head_dim;
  int block_size, max_blocks;  // block_table row width
  uint32_t block_magic;   // ceil(2^32 / block_size)
  float scale_log2;       // softmax scale * log2(e), times the k scale of an e4m3 cache
  bool kv_fp8;            // the caches hold e4m3 values
  float v_scale;          // the v scale of an e4m3 cache (the output is multiplied by it), else 1
};

}  // namespace fg::attn
