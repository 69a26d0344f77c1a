// attention/cuda/split_kv_attention.cpp — the `split_kv` attention backend (flash-decoding) for
// uniform decode batches: each request's KV is split across CTAs, and the CTA that finishes a row
// group's last split merges the splits with an fp32 log-sum-exp combine in fixed split order.
// Graph support `uniform_decode`; the batches it cannot capture (mixed prefill + decode) still
// run, eagerly, through an owned `flash` backend.
//
// Contract, in words (DESIGN.md point 4; kernel in split_kv_attention_kernels.cu):
//   - AttentionMetadata::uniform_query_len 1..4 selects split-KV (every real request then has that
//     query length); 0 (mixed) hands the batch to flash, whose contract then applies.
//   - seq_lens of padded requests is 0 (the default fill): a padded request has no splits and
//     writes nothing. The kernel reads query_start_loc[r] and [r + 1] only for requests with
//     seq_lens > 0, so it does not rely on the padded tail of query_start_loc; the runner still pads
//     it with the default (the last real offset) so that one padding serves every backend.
//   - block_table rows of padded requests are 0 (never read); rows of q past the real tokens are
//     not written; num_tokens must fit the workspace rows.
//   - split count of a request: split_kv_plan(seq_len, bounds) with the bounds fixed at
//     construction (SplitKvBounds; max_splits lowered to what max_context can use) — a
//     function of the request's own context length, never of the batch, so graph replays and
//     unpadded eager runs agree bit for bit.
// Launch parameters: one grid, from shapes and construction constants only: a CTA for every
// (split, request, row group) the policy allows while they fit the GPU's resident CTAs, else the
// resident CTAs, each walking every grid-th of the batch's units; which CTA walks a unit does not
// change its bits. No combine kernel, so a layer pays one launch. The workspace (fp32
// partial outputs and one arrival counter per request and row group, zeroed here and re-armed to
// zero by every launch) is allocated once here, from AttentionLimits; run() never syncs or
// allocates.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>

#include "attention/cuda/attention_backend.h"
#include "attention/cuda/flash_attention_checks.h"
#include "attention/cuda/split_kv_attention_kernels.h"
#include "core/cuda/cuda_check.h"
#include "core/error.h"

namespace fg {

namespace {

PaddingContract split_kv_contract(const attn::SplitKvBounds& b) {
  PaddingContract c;  // DESIGN.md defaults: seq_lens 0, slots -1, table rows 0, ids/positions 0
  c.extra_requirements = {
      "batches whose metadata say uniform_query_len 1..4 run split-KV; any other batch (mixed prefill + "
      "decode, eager only since graph support is uniform_decode) runs the flash backend, whose contract "
      "then applies: query_start_loc non-decreasing",
      "seq_lens of padded requests must be 0: a padded request then has no KV splits and writes nothing "
      "(query_start_loc entries of padded requests are not relied on; pad them with the default anyway)",
      fmt::format("the KV split count of a request depends only on its seq_len and on bounds fixed at construction "
                  "(chunks of at least {} positions, or of one tile up to {} splits; at most {} splits); a "
                  "request longer than max_context is still correct but uses longer chunks",
                  b.min_chunk, b.tile_splits, b.max_splits),
      "q may have at most min(max_tokens, 4 * max_reqs) rows (the workspace rows)",
      kReadsBeforePdlWait,
  };
  return c;
}

struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }  // destructor path: nothing to report to
};

class SplitKvAttentionBackend final : public AttentionBackend {
 public:
  SplitKvAttentionBackend(const AttentionLimits& limits, const attn::SplitKvBounds& bounds)
      : AttentionBackend(limits, PaddingContract{}), bounds_(bounds) {
    attn::check_attention_limits("split_kv", limits_);
    FG_CHECK(bounds.min_chunk > 0 && bounds.min_chunk % attn::kSplitKvTileN == 0,
             "split_kv attention: the smallest chunk must be a positive multiple of {} positions, not {}",
             attn::kSplitKvTileN, bounds.min_chunk);
    FG_CHECK(bounds.max_splits >= 1 && bounds.max_splits <= attn::kSplitKvMaxSplits,
             "split_kv attention: at most 1..{} splits per request, not {}", attn::kSplitKvMaxSplits,
             bounds.max_splits);
    FG_CHECK(bounds.tile_splits >= 0 && bounds.tile_splits <= bounds.max_splits,
             "split_kv attention: tile_splits {} outside 0..max_splits ({})", bounds.tile_splits, bounds.max_splits);
    // No workspace for more splits than a context of max_context wants (every shorter one wants
    // at most as many, so lowering the cap to it changes no plan).
    const int longest = static_cast<int>(std::clamp<int64_t>(limits_.max_context, 1, INT32_MAX));
    bounds_.max_splits = attn::split_kv_wanted(longest, bounds.max_splits, bounds.min_chunk, bounds.tile_splits);
    contract_ = split_kv_contract(bounds_);
    partial_rows_ = std::min(limits_.max_tokens, limits_.max_reqs * attn::kSplitKvMaxQueryLen);
    const size_t rows = static_cast<size_t>(bounds_.max_splits) * partial_rows_ * limits_.num_heads;
    void* out = nullptr;
    void* lse = nullptr;
    FG_CUDA_CHECK(cudaMalloc(&out, rows * limits_.head_dim * sizeof(float)));
    partial_out_.reset(out);
    FG_CUDA_CHECK(cudaMalloc(&lse, rows * sizeof(float)));
    partial_lse_.reset(lse);
    const int group = static_cast<int>(limits_.num_heads / limits_.num_kv_heads);
    arrival_counters_ = limits_.max_reqs * limits_.num_kv_heads *
                        attn::split_kv_row_groups(attn::kSplitKvMaxQueryLen, group);
    void* arrivals = nullptr;
    FG_CUDA_CHECK(cudaMalloc(&arrivals, arrival_counters_ * sizeof(int)));
    arrivals_.reset(arrivals);
    FG_CUDA_CHECK(cudaMemset(arrivals, 0, arrival_counters_ * sizeof(int)));
    // The memset runs on the legacy stream, which does not order the non-blocking streams that
    // launch the kernel: finish it here.
    FG_CUDA_CHECK(cudaDeviceSynchronize());
    resident_ctas_ = attn::split_kv_attention_prepare(static_cast<int>(limits_.head_dim));
    mixed_ = make_flash_attention(limits_);
  }

  std::string name() const override { return "split_kv"; }
  GraphSupport graph_support() const override { return GraphSupport::kUniformDecode; }

  std::string describe() const override {
    const double workspace_mib = (static_cast<double>(bounds_.max_splits) * partial_rows_ * limits_.num_heads *
                                      (limits_.head_dim + 1) * sizeof(float) +
                                  static_cast<double>(arrival_counters_) * sizeof(int)) /
                                 (1024.0 * 1024.0);
    return fmt::format(
        "split_kv: flash-decoding, q_len 1..{}, splits(L) = ceil(L / chunk), chunk = round_up(ceil(L / min({}, "
        "max(ceil(L / {}), min({}, ceil(L / {}))))), {}); 16 packed rows (GQA group of {}) x 64 KV positions per "
        "tile, 4 warps x 16-position slices, 3-stage cp.async, {} KiB smem/CTA (hd {}); up to {} resident CTAs "
        "walking the batch's (split, request, {} KV heads x row groups) units, combined by each row group's last "
        "split; workspace {:.1f} MiB",
        attn::kSplitKvMaxQueryLen, bounds_.max_splits, bounds_.min_chunk, bounds_.tile_splits, attn::kSplitKvTileN,
        attn::kSplitKvTileN, limits_.num_heads / limits_.num_kv_heads,
        attn::split_kv_smem_bytes(static_cast<int>(limits_.head_dim)) / 1024, limits_.head_dim, resident_ctas_,
        limits_.num_kv_heads, workspace_mib);
  }

  void run(const Tensor& q, const KvCacheLayer& cache, const AttentionMetadata& meta, float scale, const Tensor& out,
           cudaStream_t stream) override {
    if (meta.uniform_query_len < 1 || meta.uniform_query_len > attn::kSplitKvMaxQueryLen) {
      mixed_->run(q, cache, meta, scale, out, stream);  // not a uniform decode batch
      return;
    }
    const attn::RunShapes s = attn::check_attention_run("split_kv", limits_, q, cache, meta, out);
    FG_CHECK(s.num_tokens <= partial_rows_,
             "split_kv attention: {} query rows exceed the workspace's {} rows (4 per request, max_reqs {})",
             s.num_tokens, partial_rows_, limits_.max_reqs);
    attn::SplitKvParams p{};
    static_cast<attn::PagedAttentionArgs&>(p) = attn::paged_attention_args(s, limits_, q, cache, meta, scale, out);
    p.partial_out = static_cast<float*>(partial_out_.get());
    p.partial_lse = static_cast<float*>(partial_lse_.get());
    p.arrivals = static_cast<int*>(arrivals_.get());
    p.max_splits = bounds_.max_splits;
    p.min_chunk = bounds_.min_chunk;
    p.tile_splits = bounds_.tile_splits;
    p.partial_rows = static_cast<int>(partial_rows_);
    p.resident_ctas = resident_ctas_;
    attn::launch_split_kv_attention(p, stream);
  }

 private:
  attn::SplitKvBounds bounds_;  // max_splits lowered to what max_context uses
  int resident_ctas_ = 1;  // CTAs of the split kernel the GPU holds at once
  int64_t partial_rows_ = 0;
  int64_t arrival_counters_ = 0;
  std::unique_ptr<void, DeviceFree> partial_out_;  // F32 [max_splits, partial_rows, num_heads, head_dim]
  std::unique_ptr<void, DeviceFree> partial_lse_;  // F32 [max_splits, partial_rows, num_heads]
  std::unique_ptr<void, DeviceFree> arrivals_;     // I32 [max_reqs, num_kv_heads * row groups of 4 tokens]
  std::unique_ptr<AttentionBackend> mixed_;        // flash, for batches that are not uniform decode
};

}  // namespace

std::unique_ptr<AttentionBackend> make_split_kv_attention(const AttentionLimits& limits,
                                                         const attn::SplitKvBounds& bounds) {
  return std::make_unique<SplitKvAttentionBackend>(limits, bounds);
}

}  // namespace fg
