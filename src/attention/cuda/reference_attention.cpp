// attention/cuda/reference_attention.cpp — the reference attention backend: argument checks and
// the launch (the kernel is in reference_attention.cu).
#include "attention/cuda/reference_attention.h"

#include "attention/cuda/reference_attention_kernel.h"
#include "core/cuda/tensor_checks.h"

namespace fg {

namespace {

class ReferenceAttention final : public AttentionBackend {
 public:
  // The default contract: the reference reads nothing past the real rows it needs.
  explicit ReferenceAttention(const AttentionLimits& limits) : AttentionBackend(limits, PaddingContract{}) {
    FG_CHECK(limits.head_dim >= 1 && limits.head_dim <= 256,
             "reference attention: head_dim {} is outside [1, 256]", limits.head_dim);
  }

  std::string name() const override { return "reference"; }
  GraphSupport graph_support() const override { return GraphSupport::kAlways; }

  void run(const Tensor& q, const KvCacheLayer& cache, const AttentionMetadata& meta, float scale, const Tensor& out,
           cudaStream_t stream) override {
    cuda::require(q, DType::kBF16, "attention q");
    cuda::require(out, DType::kBF16, "attention output");
    const bool fp8 = cache.k.dtype == DType::kF8E4M3;
    cuda::require(cache.k, fp8 ? DType::kF8E4M3 : DType::kBF16, "k cache");
    cuda::require(cache.v, fp8 ? DType::kF8E4M3 : DType::kBF16, "v cache");
    cuda::require(meta.query_start_loc, DType::kI32, "query_start_loc");
    cuda::require(meta.seq_lens, DType::kI32, "seq_lens");
    cuda::require(meta.block_table, DType::kI32, "block_table");
    FG_CHECK(cache.k.rank == 4 && cache.v.rank == 4, "reference attention: caches {} / {} must be rank 4",
             cache.k.shape_string(), cache.v.shape_string());
    const int64_t n = q.dim(0), nkv = cache.k.dim(2), hd = cache.k.dim(3);
    FG_CHECK(hd >= 1 && hd <= 256 && q.rank == 2 && q.dim(1) % hd == 0, "reference attention: q {} for head_dim {}",
             q.shape_string(), hd);
    const int64_t nh = q.dim(1) / hd;
    FG_CHECK(nkv >= 1 && nh % nkv == 0, "reference attention: {} query heads for {} KV heads", nh, nkv);
    FG_CHECK(out.same_shape({n, nh * hd}), "reference attention: output {} for q {}", out.shape_string(),
             q.shape_string());
    FG_CHECK(nh == limits_.num_heads && nkv == limits_.num_kv_heads && hd == limits_.head_dim &&
                 cache.k.dim(1) == limits_.block_size && n <= limits_.max_tokens,
             "reference attention: a step of {} tokens, {}/{} heads of {}, blocks of {} does not fit the limits it "
             "was built for ({} tokens, {}/{} heads of {}, blocks of {})",
             n, nh, nkv, hd, cache.k.dim(1), limits_.max_tokens, limits_.num_heads, limits_.num_kv_heads,
             limits_.head_dim, limits_.block_size);
    const int64_t num_reqs = meta.seq_lens.dim(0);
    FG_CHECK(meta.query_start_loc.dim(0) == num_reqs + 1 && meta.block_table.rank == 2 &&
                 meta.block_table.dim(0) >= num_reqs,
             "reference attention: query_start_loc {}, seq_lens {}, block_table {} disagree on the request count",
             meta.query_start_loc.shape_string(), meta.seq_lens.shape_string(), meta.block_table.shape_string());
    cuda::launch_reference_attention(
        static_cast<const __nv_bfloat16*>(q.data), {cache.k.data, cache.v.data, fp8, cache.k_scale, cache.v_scale},
        meta.query_start_loc.as<const int32_t>(),
        meta.seq_lens.as<const int32_t>(), meta.block_table.as<const int32_t>(), n, static_cast<int>(num_reqs),
        static_cast<int>(meta.block_table.dim(1)), static_cast<int>(cache.k.dim(1)), static_cast<int>(nh),
        static_cast<int>(nkv), static_cast<int>(hd), scale, static_cast<__nv_bfloat16*>(out.data), stream);
  }
};

}  // namespace

std::unique_ptr<AttentionBackend> make_reference_attention(const AttentionLimits& limits) {
  return std::make_unique<ReferenceAttention>(limits);
}

}  // namespace fg
