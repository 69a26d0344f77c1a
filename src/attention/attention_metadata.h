// attention/attention_metadata.h — what every attention backend reads, with no CUDA in sight: one
// layer of the paged KV cache, the attention metadata of a step in DESIGN.md's layout, and the
// largest step a backend must serve (which sizes its workspaces).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace fg {

// One layer's paged KV cache. Slot s = block * block_size + offset holds token data at
// k[block][offset]; block 0 is the null block: never handed to a request, the target of padded
// block-table rows.
struct KvCacheLayer {
  Tensor k;  // [num_blocks, block_size, nkv, hd]
  Tensor v;  // [num_blocks, block_size, nkv, hd]
  // An F8_E4M3 cache (--kv-cache-dtype fp8) holds e4m3(clamp(x / scale, -448, 448)) and reads back
  // e4m3 * scale; 1.0 unless a checkpoint gives the layer's scales (as vLLM defaults them).
  float k_scale = 1.0f, v_scale = 1.0f;
};

// The attention metadata of one step, in the layout of DESIGN.md's contract.
struct AttentionMetadata {
  Tensor query_start_loc;  // I32 [num_reqs + 1]; request r owns query tokens [qsl[r], qsl[r+1])
  Tensor seq_lens;         // I32 [num_reqs]; context length of r after this step's tokens
  Tensor block_table;      // I32 [num_reqs, max_blocks_per_seq]; KV blocks of r in order
  // Host-side, from the step's bucket (so frozen with a graph like any shape): > 0 when every
  // real request runs exactly this many query tokens (uniform decode: 1), 0 for a mixed batch.
  int64_t uniform_query_len = 0;
};

// The largest step an attention backend must serve; sizes its workspaces.
struct AttentionLimits {
  int64_t max_tokens = 0;   // rows of q in one step
  int64_t max_reqs = 0;     // requests in one step
  int64_t max_context = 0;  // longest seq_len
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0, block_size = 0;
};

}  // namespace fg
