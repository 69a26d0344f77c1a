// attention/cuda/flash_attention_checks.cpp — construction and run() checks of the `flash` and
// `split_kv` backends (see the header).
#include "attention/cuda/flash_attention_checks.h"

#include <limits>
#include <numbers>

#include "core/error.h"

namespace fg::attn {

void check_attention_limits(const std::string& backend, const AttentionLimits& l) {
  FG_CHECK(l.head_dim == 64 || l.head_dim == 128,
           "{} attention: head_dim {} is not supported (kernels are built for 64 and 128)", backend, l.head_dim);
  FG_CHECK(l.block_size >= 16 && l.block_size % 16 == 0,
           "{} attention: KV block size {} is not supported (a positive multiple of 16 is required)", backend,
           l.block_size);
  FG_CHECK(l.num_kv_heads > 0 && l.num_heads > 0 && l.num_heads % l.num_kv_heads == 0,
           "{} attention: {} query heads do not form whole GQA groups over {} KV heads", backend, l.num_heads,
           l.num_kv_heads);
  FG_CHECK(l.num_kv_heads <= 65535, "{} attention: {} KV heads exceed the grid limit of 65535", backend,
           l.num_kv_heads);
  FG_CHECK(l.max_tokens > 0 && l.max_reqs > 0 && l.max_context > 0,
           "{} attention: limits need positive max_tokens ({}), max_reqs ({}) and max_context ({})", backend,
           l.max_tokens, l.max_reqs, l.max_context);
  FG_CHECK(l.max_tokens * (l.num_heads / l.num_kv_heads) < (int64_t{1} << 30),
           "{} attention: max_tokens {} times the GQA group {} is too large for 32-bit row indices", backend,
           l.max_tokens, l.num_heads / l.num_kv_heads);
  FG_CHECK(l.max_context * l.block_size < (int64_t{1} << 32),
           "{} attention: max_context {} times block size {} must stay under 2^32 (position division)", backend,
           l.max_context, l.block_size);
}

uint32_t block_size_magic(int64_t block_size) {
  return static_cast<uint32_t>(((uint64_t{1} << 32) + static_cast<uint64_t>(block_size) - 1) /
                               static_cast<uint64_t>(block_size));
}

PagedAttentionArgs paged_attention_args(const RunShapes& s, const AttentionLimits& limits, const Tensor& q,
                                        const KvCacheLayer& cache, const AttentionMetadata& meta, float scale,
                                        const Tensor& out) {
  PagedAttentionArgs p{};
  p.q = q.data;
  p.k_cache = cache.k.data;
  p.v_cache = cache.v.data;
  p.query_start_loc = meta.query_start_loc.as<const int>();
  p.seq_lens = meta.seq_lens.as<const int>();
  p.block_table = meta.block_table.as<const int>();
  p.out = out.data;
  p.num_tokens = s.num_tokens;
  p.num_reqs = s.num_reqs;
  p.num_heads = static_cast<int>(limits.num_heads);
  p.num_kv_heads = static_cast<int>(limits.num_kv_heads);
  p.head_dim = static_cast<int>(limits.head_dim);
  p.block_size = static_cast<int>(limits.block_size);
  p.max_blocks = s.max_blocks;
  p.block_magic = block_size_magic(limits.block_size);
  // An e4m3 cache's scales: k's folded into the softmax scale, v's applied to the output (every
  // output is a convex combination of v rows, so scaling it scales them).
  p.kv_fp8 = cache.k.dtype == DType::kF8E4M3;
  p.scale_log2 = (p.kv_fp8 ? scale * cache.k_scale : scale) * std::numbers::log2e_v<float>;
  p.v_scale = p.kv_fp8 ? cache.v_scale : 1.0f;
  return p;
}

namespace {
void check_tensor(const std::string& backend, const char* what, const Tensor& t, DType dtype, int rank) {
  FG_CHECK(t.device == Device::kCuda, "{} attention: {} must be a CUDA tensor", backend, what);
  FG_CHECK(t.dtype == dtype, "{} attention: {} must be {}, got {}", backend, what, dtype_name(dtype),
           dtype_name(t.dtype));
  FG_CHECK(t.rank == rank, "{} attention: {} must have rank {}, got shape {}", backend, what, rank,
           t.shape_string());
  FG_CHECK(t.numel() == 0 || t.data != nullptr, "{} attention: {} has no memory", backend, what);
}
}  // namespace

RunShapes check_attention_run(const std::string& backend, const AttentionLimits& l, const Tensor& q,
                              const KvCacheLayer& cache, const AttentionMetadata& meta, const Tensor& out) {
  check_tensor(backend, "q", q, DType::kBF16, 2);
  check_tensor(backend, "out", out, DType::kBF16, 2);
  const DType kv_dtype = cache.k.dtype == DType::kF8E4M3 ? DType::kF8E4M3 : DType::kBF16;
  check_tensor(backend, "k cache", cache.k, kv_dtype, 4);
  check_tensor(backend, "v cache", cache.v, kv_dtype, 4);
  FG_CHECK(kv_dtype == DType::kBF16 || (cache.k_scale > 0.0f && cache.v_scale > 0.0f),
           "{} attention: an FP8 cache needs positive scales, got k {} and v {}", backend, cache.k_scale,
           cache.v_scale);
  check_tensor(backend, "query_start_loc", meta.query_start_loc, DType::kI32, 1);
  check_tensor(backend, "seq_lens", meta.seq_lens, DType::kI32, 1);
  check_tensor(backend, "block_table", meta.block_table, DType::kI32, 2);

  const int64_t n = q.dim(0), width = l.num_heads * l.head_dim;
  FG_CHECK(q.dim(1) == width, "{} attention: q has {} columns, expected {} heads x {} = {}", backend, q.dim(1),
           l.num_heads, l.head_dim, width);
  FG_CHECK(out.same_shape({n, width}), "{} attention: out has shape {}, expected [{}, {}]", backend,
           out.shape_string(), n, width);
  FG_CHECK(cache.k.dim(1) == l.block_size && cache.k.dim(2) == l.num_kv_heads && cache.k.dim(3) == l.head_dim,
           "{} attention: k cache has shape {}, expected [blocks, {}, {}, {}]", backend, cache.k.shape_string(),
           l.block_size, l.num_kv_heads, l.head_dim);
  FG_CHECK(cache.v.same_shape({cache.k.dim(0), l.block_size, l.num_kv_heads, l.head_dim}),
           "{} attention: v cache has shape {}, k cache {}", backend, cache.v.shape_string(),
           cache.k.shape_string());
  const int64_t reqs = meta.seq_lens.dim(0);
  FG_CHECK(meta.query_start_loc.dim(0) == reqs + 1, "{} attention: query_start_loc has {} entries for {} requests",
           backend, meta.query_start_loc.dim(0), reqs);
  FG_CHECK(meta.block_table.dim(0) >= reqs, "{} attention: block_table has {} rows for {} requests", backend,
           meta.block_table.dim(0), reqs);
  FG_CHECK(n <= l.max_tokens, "{} attention: {} query rows exceed max_tokens {}", backend, n, l.max_tokens);
  FG_CHECK(reqs <= l.max_reqs && reqs <= 65535, "{} attention: {} requests exceed max_reqs {} (or 65535)", backend,
           reqs, l.max_reqs);
  const int64_t max_blocks = meta.block_table.dim(1);
  FG_CHECK(max_blocks * l.block_size * l.block_size < (int64_t{1} << 32) &&
               max_blocks * l.block_size <= std::numeric_limits<int32_t>::max(),
           "{} attention: block_table width {} x block size {} is too long for 32-bit positions", backend,
           max_blocks, l.block_size);
  RunShapes s;
  s.num_tokens = static_cast<int>(n);
  s.num_reqs = static_cast<int>(reqs);
  s.max_blocks = static_cast<int>(max_blocks);
  s.num_blocks = static_cast<int>(cache.k.dim(0));
  s.group = static_cast<int>(l.num_heads / l.num_kv_heads);
  return s;
}

}  // namespace fg::attn
