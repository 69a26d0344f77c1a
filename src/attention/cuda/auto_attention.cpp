// attention/cuda/auto_attention.cpp — the `auto` attention backend, the engine's default: uniform
// decode batches for which flash's one CTA per (request, KV head) would leave most SMs idle run
// `split_kv`; every other batch (mixed prefill + decode, larger decode batches) runs `flash`.
// The split bounds suit the batch's size: one split_kv backend for each bounds the buckets call
// for (auto_split_bounds), built when the capture sizes are set, each with a workspace for the
// largest bucket it serves. The rules and the measurements behind them: auto_attention.h.
//
// Contract, in words: both backends' contracts hold (they ask the same padding: DESIGN.md's
// defaults, query_start_loc non-decreasing). Graph support `always`: which backend runs is decided
// on the host from the step's shapes and AttentionMetadata::uniform_query_len, which the runner
// fixes per bucket (1 for uniform-decode buckets, 0 for mixed ones), and from the bucket that holds
// the request count, so a captured graph and the eager run of any batch it holds take the same
// kernel with the same bounds (DESIGN.md point 7; the runner's eager steps pass the
// uniform_query_len of their bucket).
// In batch-invariant mode every batch runs flash, whose arithmetic for a request does not depend
// on the batch around it.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "attention/cuda/attention_backend.h"
#include "attention/cuda/auto_attention.h"
#include "core/cuda/cuda_check.h"
#include "core/error.h"
#include "core/size_buckets.h"

namespace fg {

namespace {

PaddingContract auto_contract(const PaddingContract& flash, const std::vector<const PaddingContract*>& splits) {
  PaddingContract c;  // DESIGN.md defaults, as both parts ask
  c.extra_requirements.push_back(
      "uniform decode batches (uniform_query_len 1..4, at most 4 query rows per request of the bucket) whose request "
      "count's bucket top x num_kv_heads x row groups is at most half the GPU's SM count run split_kv with the "
      "split bounds of that product, every other batch flash; both contracts apply:");
  std::vector<const PaddingContract*> parts = {&flash};
  parts.insert(parts.end(), splits.begin(), splits.end());
  for (const PaddingContract* part : parts)
    for (const std::string& line : part->extra_requirements)
      if (line != kReadsBeforePdlWait && std::find(c.extra_requirements.begin(), c.extra_requirements.end(), line) ==
                                             c.extra_requirements.end())
        c.extra_requirements.push_back(line);
  c.extra_requirements.push_back(kReadsBeforePdlWait);
  return c;
}

class AutoAttentionBackend final : public AttentionBackend {
 public:
  explicit AutoAttentionBackend(const AttentionLimits& limits)
      : AttentionBackend(limits, PaddingContract{}), flash_(make_flash_attention(limits)) {
    int device = 0;
    FG_CUDA_CHECK(cudaGetDevice(&device));
    FG_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device));
    resident_ctas_ = attn::split_kv_attention_prepare(static_cast<int>(limits_.head_dim));  // flash took the hd
    build_split_backends();
  }

  std::string name() const override { return "auto"; }
  GraphSupport graph_support() const override { return GraphSupport::kAlways; }
  void set_capture_sizes(const std::vector<int64_t>& sizes) override {
    request_buckets_ = SizeBuckets(sizes);
    build_split_backends();
  }
  void set_batch_invariant(bool on) override { batch_invariant_ = on; }

  std::string describe() const override {
    std::string text = fmt::format(
        "auto: uniform decode batches of at most {} requests per bucket (x {} KV heads x row groups <= {} SMs / 2) on "
        "split_kv, the rest on flash{}",
        sm_count_ / 2 / limits_.num_kv_heads, limits_.num_kv_heads, sm_count_,
        batch_invariant_ ? " (batch-invariant: everything on flash)" : "");
    for (const SplitBackend& s : splits_)
      text += fmt::format(" | buckets up to {} requests: {}", s.largest_bucket, s.backend->describe());
    return text + " | " + flash_->describe();
  }

  void run(const Tensor& q, const KvCacheLayer& cache, const AttentionMetadata& meta, float scale, const Tensor& out,
           cudaStream_t stream) override {
    AttentionBackend* split = split_backend(q, meta);
    (split != nullptr ? *split : *flash_).run(q, cache, meta, scale, out, stream);
  }

 private:
  struct SplitBackend {
    attn::SplitKvBounds bounds;
    int64_t largest_bucket = 0;  // the largest request bucket top it serves
    int64_t max_rows = 0;        // the query rows its workspace holds
    std::unique_ptr<AttentionBackend> backend;
  };

  int group() const { return static_cast<int>(limits_.num_heads / limits_.num_kv_heads); }

  // The split bounds of a uniform decode batch in the bucket topped by bucket_reqs, or nullopt
  // when it runs flash.
  std::optional<attn::SplitKvBounds> split_bounds(int64_t bucket_reqs, int query_len) const {
    if (!attn::auto_attention_splits(bucket_reqs, limits_.num_kv_heads, group(), query_len, sm_count_))
      return std::nullopt;
    const int64_t units = bucket_reqs * limits_.num_kv_heads * attn::split_kv_row_groups(query_len, group());
    return attn::auto_split_bounds(units, sm_count_, resident_ctas_);
  }

  // One split_kv backend per bounds that some bucket and query length call for, sized for the
  // largest bucket that calls for it (on the host, before any capture: it allocates); and the
  // contract, which names each one's bounds.
  void build_split_backends() {
    splits_.clear();
    for (int64_t n = 1; n <= limits_.max_reqs;) {
      const int64_t top = request_buckets_.of(n).hi;
      bool any = false;
      for (int query_len = 1; query_len <= attn::kSplitKvMaxQueryLen; ++query_len) {
        const std::optional<attn::SplitKvBounds> bounds = split_bounds(top, query_len);
        if (!bounds) continue;
        any = true;
        auto same =
            std::find_if(splits_.begin(), splits_.end(), [&](const SplitBackend& s) { return s.bounds == *bounds; });
        if (same == splits_.end()) same = splits_.insert(splits_.end(), SplitBackend{*bounds, 0, 0, nullptr});
        same->largest_bucket = std::max(same->largest_bucket, top);
      }
      if (!any) break;  // larger buckets split even less
      n = top + 1;
    }
    for (SplitBackend& s : splits_) {
      AttentionLimits l = limits_;
      l.max_reqs = std::min(limits_.max_reqs, s.largest_bucket);
      l.max_tokens = std::min(limits_.max_tokens, attn::kSplitKvMaxQueryLen * l.max_reqs);
      s.max_rows = l.max_tokens;
      s.backend = make_split_kv_attention(l, s.bounds);
    }
    std::vector<const PaddingContract*> split_contracts;
    for (const SplitBackend& s : splits_) split_contracts.push_back(&s.backend->contract());
    contract_ = auto_contract(flash_->contract(), split_contracts);
  }

  // The split_kv backend a step runs on, or nullptr for flash. Besides the rule, its q rows must
  // fit that backend's workspace (4 per request of the bucket, up to max_reqs; the runner's
  // uniform decode buckets have one): a function of the padded shape, like the rule.
  AttentionBackend* split_backend(const Tensor& q, const AttentionMetadata& meta) const {
    if (batch_invariant_ || meta.seq_lens.rank != 1 || meta.seq_lens.dim(0) < 1 || q.rank < 1) return nullptr;
    const int64_t bucket_reqs = request_buckets_.of(meta.seq_lens.dim(0)).hi;
    const std::optional<attn::SplitKvBounds> bounds =
        split_bounds(bucket_reqs, static_cast<int>(meta.uniform_query_len));
    if (!bounds) return nullptr;
    for (const SplitBackend& s : splits_)
      if (s.bounds == *bounds && s.largest_bucket >= bucket_reqs)
        return q.dim(0) <= s.max_rows ? s.backend.get() : nullptr;
    fail("auto attention: no split_kv backend built for a bucket of {} requests (max_reqs {})", bucket_reqs,
         limits_.max_reqs);
  }

  std::unique_ptr<AttentionBackend> flash_;
  std::vector<SplitBackend> splits_;
  int sm_count_ = 0;
  int resident_ctas_ = 1;  // split_kv CTAs the GPU holds at once, at this head dim
  SizeBuckets request_buckets_;  // the runner's capture sizes; powers of two until set
  bool batch_invariant_ = false;
};

}  // namespace

std::unique_ptr<AttentionBackend> make_auto_attention(const AttentionLimits& limits) {
  return std::make_unique<AutoAttentionBackend>(limits);
}

}  // namespace fg
