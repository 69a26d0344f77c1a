// attention/cuda/auto_attention.h — the rule by which the `auto` attention backend
// (auto_attention.cpp) gives a uniform decode batch to `split_kv` rather than `flash`.
//
// flash decode runs one CTA per (request, KV head, row group) and walks the whole context in it;
// split_kv cuts each request's context into splits of its own and merges them. Where flash's CTAs
// do not fill the GPU, splitting is what keeps memory busy: at batch 1, hd 128, 8 KV heads, split_kv
// took 10.6 us at 4k of context against flash's 57.6, and 39 against 444 at 32k. Where they do,
// splitting only adds the partials' writes and the merge.
#pragma once

#include <cstdint>

#include "attention/cuda/split_kv_attention_kernels.h"

namespace fg::attn {

// True when a uniform decode batch of query length `query_len`, whose request count falls in the
// bucket topped by `bucket_reqs` (core/size_buckets.h: the same for a graph and for the eager run of
// any batch it holds, DESIGN.md point 7), runs split_kv: while flash would give it CTAs on at most
// half of the SMs. Measured on the H200 (132 SMs, hd 128, 8 KV heads; bench/RESULTS.md,
// 2026-12-01): at batch 1-8 split_kv is faster at every context from 512 to 32k (at batch 8,
// 8.8 against 10.4 us at 512, 49 against 68 at 4k, 272 against 545 at 32k); at batch 16 (flash:
// 128 CTAs) flash is faster up to 8k (12.2 against 13.3 us at 512, 80.8 against 89 at 4k) and
// slower beyond (315 against 288 at 16k, 627 against 525 at 32k); from batch 32 on flash is faster
// everywhere.
constexpr bool auto_attention_splits(int64_t bucket_reqs, int64_t num_kv_heads, int group, int query_len,
                                     int sm_count) {
  if (query_len < 1 || query_len > kSplitKvMaxQueryLen) return false;
  return 2 * bucket_reqs * num_kv_heads * split_kv_row_groups(query_len, group) <= sm_count;
}

// The split_kv bounds (split_kv_attention_kernels.h) for a batch that auto_attention_splits gives
// to split_kv, from `units`: bucket top x KV heads x row groups, the CTAs that one split of every
// request takes. Every split pays a pipeline fill and a partial to merge: so at long contexts
// about as many CTAs in all as the GPU holds at once (max_splits; `resident_ctas`, 2 per SM at hd
// 128, 4 at hd 64), and at short ones one-tile chunks up to about one per SM (tile_splits); powers
// of two, at most 32. Measured on the H200 (bench/RESULTS.md, 2026-12-01; hd 128, 8
// KV heads, us, against the split_kv backend's fixed bounds (256, 32, 0)): batch 1 at 512 / 1k /
// 4k / 32k of context: 5.3 / 6.1 / 9.8 / 37.7 with (256, 32, 16) against 7.6 / 8.4 / 9.6 / 37.8;
// batch 4 at 4k / 32k: 21.3 / 128.5 with (256, 8, 4) against 26.2 / 139.3; batch 8 at 512 / 4k /
// 8k: 9.2 / 36.5 / 66.5 with (256, 4, 2) against 8.7 / 48.0 / 89.5.
constexpr int auto_floor_pow2(int64_t x) {
  int p = 1;
  while (p < kSplitKvMaxSplits && 2 * int64_t{p} <= x) p *= 2;
  return p;
}
constexpr SplitKvBounds auto_split_bounds(int64_t units, int sm_count, int resident_ctas) {
  const int max_splits = auto_floor_pow2(resident_ctas / units);
  const int tile_splits = units <= sm_count ? auto_floor_pow2(sm_count / units) : 0;
  return {256, max_splits, tile_splits < max_splits ? tile_splits : max_splits};
}

static_assert(auto_split_bounds(8, 132, 264) == SplitKvBounds{256, 32, 16} &&
                  auto_split_bounds(16, 132, 264) == SplitKvBounds{256, 16, 8} &&
                  auto_split_bounds(32, 132, 264) == SplitKvBounds{256, 8, 4} &&
                  auto_split_bounds(64, 132, 264) == SplitKvBounds{256, 4, 2} &&
                  auto_split_bounds(64, 132, 528) == SplitKvBounds{256, 8, 2},
              "8 KV heads on 132 SMs: batches 1, 2, 4 and 8 at hd 128; batch 8 at hd 64");
static_assert(split_kv_plan(512, 32, 256, 16).num_splits == 8 && split_kv_plan(1024, 32, 256, 16).num_splits == 16 &&
                  split_kv_plan(4096, 32, 256, 16).num_splits == 16 &&
                  split_kv_plan(8192, 32, 256, 16).num_splits == 32 && split_kv_plan(512, 32, 256, 0).num_splits == 2,
              "a lone request: one-tile splits up to 16 at short contexts, 256-position ones beyond");

static_assert(auto_attention_splits(8, 8, 4, 1, 132) && !auto_attention_splits(16, 8, 4, 1, 132) &&
                  !auto_attention_splits(1, 8, 4, 0, 132) && !auto_attention_splits(1, 8, 4, 5, 132),
              "8 KV heads on 132 SMs: 8 decodes split, 16 do not; mixed batches never do");

}  // namespace fg::attn
