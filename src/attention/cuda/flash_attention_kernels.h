// attention/cuda/flash_attention_kernels.h — the launcher of the `flash` attention kernel: plain
// pointers and sizes, no Tensor (core/tensor.h pulls in fmt, which nvcc cannot compile). The
// backend class in flash_attention.cpp validates tensors and fills FlashParams.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "attention/cuda/paged_attention_args.h"

namespace fg::attn {

// Tile shape of the flash kernel, shared with the host for grid sizing and describe().
constexpr int kFlashTileM = 128;    // packed query rows (token, head of the GQA group) per CTA
constexpr int kFlashTileN = 64;     // KV positions per pipeline stage (the 128-row walk: flash_wide_tile_n)
constexpr int kFlashThreads = 128;  // 4 warps, 32 query rows each
constexpr int kFlashStages = 2;     // KV tiles in the 128-row walk's cp.async ring
constexpr int kFlashShortRows = 16;   // a tile of at most this many rows walks on four warps in slices
constexpr int kFlashShortStages = 3;  // KV tiles in that walk's ring (paged_kv_walk.h's kKvRingStages)

// KV positions per tile of the 128-row walk. At hd 128, 48: S of 32 rows x 64 positions (64
// registers beside O's 128) left ptxas no room to request the next fragments early, and it spilled;
// 32 positions cost more instructions per mma (the tile's fixed work: barriers, copies, the
// softmax's reductions). Measured at 512 / 1k / 2k / 4k / 8k tokens (bench/RESULTS.md, 2026-12-01,
// three interleaved reps): 48 against 32, +2 / -2 / -3 / -3 / -2%; against 64, -7 /
// -4 / -2 / -1 / -2%.
constexpr int flash_wide_tile_n(int hd) { return hd > 64 ? 48 : kFlashTileN; }

// Dynamic shared memory of the kernel at head_dim hd: the larger of the two walks' Q tile + ring
// (hd 128: 100 KiB for the short walk, 80 KiB for the 128-row one; two CTAs per SM).
constexpr int flash_smem_bytes(int hd) {
  const int wide = (kFlashTileM + 2 * kFlashStages * flash_wide_tile_n(hd)) * hd * 2;
  const int short_walk = (kFlashShortRows + 2 * kFlashShortStages * kFlashTileN) * hd * 2;
  return wide > short_walk ? wide : short_walk;
}

// The flash kernel reads the paged-attention arguments every GPU backend shares.
using FlashParams = PagedAttentionArgs;

// Raises the kernels' dynamic shared-memory limit; call once before the first launch (at backend
// construction, never inside a capture). Raises fg::Error on a CUDA failure.
void flash_attention_prepare();

// Enqueues the kernel on `stream`; the grid is (ceil(num_tokens * G / 128) + num_reqs, num_kv_heads),
// a function of the shapes only. Checks the launch (cudaGetLastError) and raises fg::Error.
void launch_flash_attention(const FlashParams& params, cudaStream_t stream);

}  // namespace fg::attn
