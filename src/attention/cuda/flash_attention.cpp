// attention/cuda/flash_attention.cpp — the `flash` attention backend: variable-length paged causal
// attention for any batch (prefill chunks, decodes, mixed), graph support `always`.
//
// Contract, in words (DESIGN.md point 4; kernel in flash_attention_kernels.cu):
//   - query_start_loc is non-decreasing over all num_reqs_padded + 1 entries; padded entries repeat
//     the last real offset, so padded requests own zero query tokens. This is REQUIRED: work tiles
//     are numbered by a prefix sum of per-request tile counts and each CTA ranks its tile index
//     against those sums; a decreasing entry (the seed's -1) makes the sums drop and the real
//     tiles past the drop are silently never computed (their rows keep old contents).
//   - seq_lens of padded requests is 0, block_table rows of padded requests are 0 (never read:
//     a request with no query tokens has no tiles).
//   - query_start_loc[num_reqs_padded] <= rows of q; rows past it are not written.
//   - for a real request, seq_lens[r] >= its query tokens and ceil(seq_lens[r] / block_size) <=
//     block_table width (longer contexts are clipped to the table row, never read past it).
//   - the metadata and every KV row but the step's own are read before the kernel's PDL wait, so
//     they must be in place before the kernel launched just before it starts (kReadsBeforePdlWait).
// Launch parameters: grid (ceil(num_tokens * G / 64) + num_reqs, num_kv_heads), 128 threads,
// dynamic shared memory by head dim — all from shapes, frozen at capture. run() never syncs,
// allocates or reads device memory on the host; there is no workspace.
#include <fmt/format.h>


#include "attention/cuda/attention_backend.h"
#include "attention/cuda/flash_attention_checks.h"
#include "attention/cuda/flash_attention_kernels.h"

namespace fg {

namespace {

PaddingContract flash_contract() {
  PaddingContract c;  // DESIGN.md defaults: seq_lens 0, slots -1, table rows 0, ids/positions 0
  c.requires_uniform_query_len = false;
  c.extra_requirements = {
      "query_start_loc must be non-decreasing over all num_reqs_padded + 1 entries (padded entries repeat "
      "the last real offset): each CTA finds its (request, query tile) by ranking its tile index against "
      "the prefix sums of per-request tile counts ceil(n_q * G / 64); a decreasing entry such as the -1 "
      "padding of vLLM's full-graph bug makes those sums drop, the real query tiles past the drop are "
      "ranked into a padded request and never computed, and their output rows silently keep old "
      "contents — only under graph replay, since an unpadded eager launch never reads the tail",
      "query_start_loc[num_reqs_padded] must not exceed the rows of q; query rows past it belong to no "
      "request and are not written",
      "a real request needs seq_lens >= its query tokens and ceil(seq_lens / block_size) <= the "
      "block_table width; padded requests (seq_lens 0, zero query tokens) read nothing and write nothing",
      kReadsBeforePdlWait,
  };
  return c;
}

class FlashAttentionBackend final : public AttentionBackend {
 public:
  explicit FlashAttentionBackend(const AttentionLimits& limits) : AttentionBackend(limits, flash_contract()) {
    attn::check_attention_limits("flash", limits_);
    attn::flash_attention_prepare();
  }

  std::string name() const override { return "flash"; }
  GraphSupport graph_support() const override { return GraphSupport::kAlways; }

  std::string describe() const override {
    const int64_t smem = attn::flash_smem_bytes(static_cast<int>(limits_.head_dim));
    return fmt::format(
        "flash: paged varlen causal, mma.sync m16n8k16 bf16->fp32, tile {} packed rows (GQA group of {} in M) x "
        "{} KV positions, {} warps of {} rows, {}-stage cp.async (tiles of <= {} rows: four warps on slices of "
        "{}-position KV tiles, {} stages), {} KiB smem/CTA (hd {}); grid (ceil(n*G/{}) + num_reqs, {}) from "
        "shapes; tiles ranked on a per-CTA prefix sum of query_start_loc; no workspace",
        attn::kFlashTileM, limits_.num_heads / limits_.num_kv_heads,
        attn::flash_wide_tile_n(static_cast<int>(limits_.head_dim)), attn::kFlashThreads / 32,
        attn::kFlashTileM / (attn::kFlashThreads / 32), attn::kFlashStages, attn::kFlashShortRows, attn::kFlashTileN,
        attn::kFlashShortStages, smem / 1024, limits_.head_dim, attn::kFlashTileM, limits_.num_kv_heads);
  }

  void run(const Tensor& q, const KvCacheLayer& cache, const AttentionMetadata& meta, float scale, const Tensor& out,
           cudaStream_t stream) override {
    const attn::RunShapes s = attn::check_attention_run("flash", limits_, q, cache, meta, out);
    attn::launch_flash_attention(attn::paged_attention_args(s, limits_, q, cache, meta, scale, out), stream);
  }
};

}  // namespace

std::unique_ptr<AttentionBackend> make_flash_attention(const AttentionLimits& limits) {
  return std::make_unique<FlashAttentionBackend>(limits);
}

}  // namespace fg
