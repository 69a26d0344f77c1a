// attention/cuda/auto_attention.cpp — the `auto` attention backend, the engine's default: uniform
// decode batches for which flash's one CTA per (request, KV head) would leave most SMs idle run
// `split_kv`; every other batch (mixed prefill + decode, larger decode batches) runs `flash`.
// The rule and the measurements behind it: auto_attention.h.
//
// Contract, in words: both backends' contracts hold (they ask the same padding: DESIGN.md's
// defaults, query_start_loc non-decreasing). Graph support `always`: which backend runs is decided
// on the host from the step's shapes and AttentionMetadata::uniform_query_len, which the runner
// fixes per bucket (1 for uniform-decode buckets, 0 for mixed ones), and from the bucket that holds
// the request count, so a captured graph and the eager run of any batch it holds take the same
// kernel (DESIGN.md point 7; the runner's eager steps pass the uniform_query_len of their bucket).
// In batch-invariant mode every batch runs flash, whose arithmetic for a request does not depend
// on the batch around it.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "attention/cuda/attention_backend.h"
#include "attention/cuda/auto_attention.h"
#include "backend/cuda/cuda_check.h"
#include "core/size_buckets.h"

namespace fg {

namespace {

PaddingContract auto_contract(const PaddingContract& flash, const PaddingContract& split) {
  PaddingContract c;  // DESIGN.md defaults, as both parts ask
  c.extra_requirements.push_back(
      "uniform decode batches (uniform_query_len 1..4) whose request count's bucket top x num_kv_heads x row groups "
      "is at most half the GPU's SM count run split_kv, every other batch flash; both contracts apply:");
  for (const PaddingContract* part : {&flash, &split})
    for (const std::string& line : part->extra_requirements)
      if (line != kReadsBeforePdlWait) c.extra_requirements.push_back(line);
  c.extra_requirements.push_back(kReadsBeforePdlWait);
  return c;
}

class AutoAttentionBackend final : public AttentionBackend {
 public:
  explicit AutoAttentionBackend(const AttentionLimits& limits)
      : limits_(limits), flash_(make_flash_attention(limits)), split_(make_split_kv_attention(limits)),
        contract_(auto_contract(flash_->contract(), split_->contract())) {
    int device = 0;
    FG_CUDA_CHECK(cudaGetDevice(&device));
    FG_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device));
  }

  std::string name() const override { return "auto"; }
  GraphSupport graph_support() const override { return GraphSupport::kAlways; }
  const PaddingContract& contract() const override { return contract_; }
  void set_capture_sizes(const std::vector<int64_t>& sizes) override { request_buckets_ = SizeBuckets(sizes); }
  void set_batch_invariant(bool on) override { batch_invariant_ = on; }

  std::string describe() const override {
    return fmt::format(
        "auto: uniform decode batches of at most {} requests per bucket (x {} KV heads x row groups <= {} SMs / 2) on "
        "split_kv, the rest on flash{} | {} | {}",
        sm_count_ / 2 / limits_.num_kv_heads, limits_.num_kv_heads, sm_count_,
        batch_invariant_ ? " (batch-invariant: everything on flash)" : "", split_->describe(), flash_->describe());
  }

  void run(const Tensor& q, const KvCacheLayer& cache, const AttentionMetadata& meta, float scale, const Tensor& out,
           cudaStream_t stream) override {
    AttentionBackend& chosen = splits(meta) ? *split_ : *flash_;
    chosen.run(q, cache, meta, scale, out, stream);
  }

 private:
  bool splits(const AttentionMetadata& meta) const {
    if (batch_invariant_ || meta.seq_lens.rank != 1 || meta.seq_lens.dim(0) < 1) return false;
    const int64_t bucket_reqs = request_buckets_.of(meta.seq_lens.dim(0)).hi;
    const int group = static_cast<int>(limits_.num_heads / limits_.num_kv_heads);
    return attn::auto_attention_splits(bucket_reqs, limits_.num_kv_heads, group,
                                       static_cast<int>(meta.uniform_query_len), sm_count_);
  }

  AttentionLimits limits_;
  std::unique_ptr<AttentionBackend> flash_, split_;
  PaddingContract contract_;
  int sm_count_ = 0;
  SizeBuckets request_buckets_;  // the runner's capture sizes; powers of two until set
  bool batch_invariant_ = false;
};

}  // namespace

std::unique_ptr<AttentionBackend> make_auto_attention(const AttentionLimits& limits) {
  return std::make_unique<AutoAttentionBackend>(limits);
}

}  // namespace fg
