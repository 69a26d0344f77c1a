// attention/cuda/flash_attention_kernels.h — the launcher of the `flash` attention kernel: plain
// pointers and sizes, no Tensor (core/tensor.h pulls in fmt, which nvcc cannot compile). The
// backend class in flash_attention.cpp validates tensors and fills FlashParams.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fg::attn {

// Tile shape of the flash kernel, shared with the host for grid sizing and describe().
constexpr int kFlashTileM = 64;   // packed query rows (token, head of the GQA group) per CTA
constexpr int kFlashTileN = 64;   // KV positions per pipeline stage
constexpr int kFlashThreads = 128;  // 4 warps, 16 query rows each
constexpr int kFlashStages = 3;    // KV tiles in the cp.async pipeline (2 CTAs of 112 KB per SM at hd 128)

struct FlashParams {
  const void* q;          // BF16 [num_tokens, num_heads * head_dim]
  const void* k_cache;    // BF16 [num_blocks, block_size, num_kv_heads, head_dim]
  const void* v_cache;    // BF16 [num_blocks, block_size, num_kv_heads, head_dim]
  const int* query_start_loc;  // I32 [num_reqs + 1], non-decreasing (contract)
  const int* seq_lens;    // I32 [num_reqs]
  const int* block_table;  // I32 [>= num_reqs, max_blocks]
  void* out;              // BF16 [num_tokens, num_heads * head_dim]
  int num_tokens;         // rows of q and out (the padded count under a graph)
  int num_reqs;           // entries of seq_lens (the padded count under a graph)
  int num_heads, num_kv_heads, head_dim;
  int block_size, max_blocks;  // block_table row width
  uint32_t block_magic;   // ceil(2^32 / block_size)
  float scale_log2;       // softmax scale * log2(e)
};

// Raises the kernels' dynamic shared-memory limit; call once before the first launch (at backend
// construction, never inside a capture). Raises fg::Error on a CUDA failure.
void flash_attention_prepare();

// Enqueues the kernel on `stream`; the grid is (ceil(num_tokens * G / 64) + num_reqs, num_kv_heads),
// a function of the shapes only. Checks the launch (cudaGetLastError) and raises fg::Error.
void launch_flash_attention(const FlashParams& params, cudaStream_t stream);

}  // namespace fg::attn
