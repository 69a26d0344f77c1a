// attention/cuda/split_kv_attention_kernels.h — launcher and split policy of the `split_kv`
// (flash-decoding) kernel: plain pointers and sizes, no Tensor (core/tensor.h pulls in fmt, which
// nvcc cannot compile). The backend class in split_kv_attention.cpp validates tensors, owns the
// workspace and fills SplitKvParams.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "attention/cuda/paged_attention_args.h"

namespace fg::attn {

// Split policy. A request of context L is cut into
//   num_splits(L) = ceil(L / chunk(L)) pieces, chunk(L) = round_up(ceil(L / wanted(L)), kSplitKvTileN),
//   wanted(L) = min(max_splits, max(ceil(L / min_chunk), min(tile_splits, ceil(L / kSplitKvTileN)))),
// a function of L and of the backend's bounds (SplitKvBounds, fixed at construction) only — never
// of the batch — so a request's arithmetic is the same alone, in any batch and under any padding
// (DESIGN.md point 7).
constexpr int kSplitKvTileN = 64;       // KV positions per pipeline stage
constexpr int kSplitKvMaxSplits = 32;   // upper bound of max_splits (the combine uses a lane per split)
constexpr int kSplitKvMaxQueryLen = 4;  // uniform query lengths 1..4 are served
constexpr int kSplitKvRowsPerCta = 16;  // packed (token, head) rows per CTA: one m16 MMA tile
constexpr int kSplitKvThreads = 128;    // 4 warps, each a 16-position slice of every KV tile

// The split policy's bounds, fixed when a backend is built: a split walks at least min_chunk
// positions (a multiple of kSplitKvTileN), except that a short context may still reach tile_splits
// splits with chunks as short as one tile; and a request has at most max_splits splits (1..32; the
// backend lowers it further to what max_context can use). Every split a CTA walks pays a pipeline
// fill and a partial to merge, so the best bounds depend on how many requests share the GPU: a
// lone request wants many short splits, a batch of 8 few long ones (bench/RESULTS.md,
// 2026-12-01). The `split_kv` backend keeps the defaults; `auto` picks bounds by the batch's bucket
// (auto_attention.h), with one split_kv backend for each.
struct SplitKvBounds {
  int min_chunk = 256;
  int max_splits = kSplitKvMaxSplits;
  int tile_splits = 0;  // 0: chunks never shorter than min_chunk
  friend constexpr bool operator==(const SplitKvBounds&, const SplitKvBounds&) = default;
};

struct SplitKvPlan {
  int num_splits;  // 0 for a padded request (L <= 0)
  int chunk;       // positions per split, a multiple of kSplitKvTileN
};

// wanted(L) of the policy above (context_len >= 1): non-decreasing in L, so wanted(max_context)
// bounds the splits of every shorter context.
__host__ __device__ constexpr int split_kv_wanted(int context_len, int max_splits, int min_chunk, int tile_splits) {
  int wanted = (context_len + min_chunk - 1) / min_chunk;
  const int tiles = (context_len + kSplitKvTileN - 1) / kSplitKvTileN;
  const int short_splits = tiles < tile_splits ? tiles : tile_splits;
  if (wanted < short_splits) wanted = short_splits;
  return wanted < max_splits ? wanted : max_splits;
}

__host__ __device__ constexpr SplitKvPlan split_kv_plan(int context_len, int max_splits, int min_chunk,
                                                        int tile_splits) {
  if (context_len <= 0) return {0, 0};
  const int wanted = split_kv_wanted(context_len, max_splits, min_chunk, tile_splits);
  int chunk = (context_len + wanted - 1) / wanted;
  chunk = (chunk + kSplitKvTileN - 1) / kSplitKvTileN * kSplitKvTileN;
  return {(context_len + chunk - 1) / chunk, chunk};
}

// The paged-attention arguments (num_tokens <= partial_rows; seq_lens 0 for padded requests), and
// the workspace and split policy.
struct SplitKvParams : PagedAttentionArgs {
  float* partial_out;      // F32 [max_splits, partial_rows, num_heads, head_dim], normalized per split
  float* partial_lse;      // F32 [max_splits, partial_rows, num_heads], log2-domain log-sum-exp
  int* arrivals;           // I32 [num_reqs, num_kv_heads * row_groups]: splits done; 0 between launches
  int max_splits;          // the policy's bounds (SplitKvBounds): construction constants
  int min_chunk;
  int tile_splits;
  int partial_rows;        // rows of the workspace
  int resident_ctas;       // CTAs of the kernel the GPU holds at once (split_kv_attention_prepare): the grid's cap
};

// CTAs per KV head that hold the packed (token, query head) rows of a request of up to
// `query_len` tokens with `group` query heads per KV head: the grid's z extent per KV head, and
// the number of arrival counters per request and KV head.
constexpr int split_kv_row_groups(int query_len, int group) {
  return (query_len * group + kSplitKvRowsPerCta - 1) / kSplitKvRowsPerCta;
}

// Shared memory of the split kernel for a head dim (for the attribute and describe()).
constexpr int split_kv_smem_bytes(int head_dim) {
  return (kSplitKvRowsPerCta + 2 * 3 * kSplitKvTileN) * head_dim * 2;
}

// Raises the kernel's dynamic shared-memory limit; once, at construction. Returns the CTAs of the
// kernel at this head dim that the current GPU holds at once (SMs x CTAs per SM), for
// SplitKvParams::resident_ctas. Raises fg::Error.
int split_kv_attention_prepare(int head_dim);

// Enqueues the split kernel, from shapes and construction constants, with row_groups =
// split_kv_row_groups(min(4, num_tokens), G): while max_splits x num_reqs x nkv x row_groups CTAs
// fit resident_ctas, a CTA for each (split, request, row group) the policy allows; beyond,
// resident_ctas CTAs, each walking every grid-th of the batch's units. One launch:
// the last split CTA of each row group combines the splits (no combine kernel, so no second
// launch's latency per layer). params.arrivals must be zero, as construction leaves it and every
// launch leaves it again. Checks the launch and raises fg::Error.
void launch_split_kv_attention(const SplitKvParams& params, cudaStream_t stream);

}  // namespace fg::attn
