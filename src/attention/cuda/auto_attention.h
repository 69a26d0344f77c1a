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
// half of the SMs. Measured on the H200 (132 SMs, hd 128, 8 KV heads; bench/RESULTS.md, session 12
// runs 1 and 6): at batch 1-8 split_kv is faster at every context from 512 to 32k (at batch 8,
// 8.8 against 10.4 us at 512, 49 against 68 at 4k, 272 against 545 at 32k); at batch 16 (flash:
// 128 CTAs) flash is faster up to 8k (12.2 against 13.3 us at 512, 80.8 against 89 at 4k) and
// slower beyond (315 against 288 at 16k, 627 against 525 at 32k); from batch 32 on flash is faster
// everywhere.
constexpr bool auto_attention_splits(int64_t bucket_reqs, int64_t num_kv_heads, int group, int query_len,
                                     int sm_count) {
  if (query_len < 1 || query_len > kSplitKvMaxQueryLen) return false;
  return 2 * bucket_reqs * num_kv_heads * split_kv_row_groups(query_len, group) <= sm_count;
}

static_assert(auto_attention_splits(8, 8, 4, 1, 132) && !auto_attention_splits(16, 8, 4, 1, 132) &&
                  !auto_attention_splits(1, 8, 4, 0, 132) && !auto_attention_splits(1, 8, 4, 5, 132),
              "8 KV heads on 132 SMs: 8 decodes split, 16 do not; mixed batches never do");

}  // namespace fg::attn
