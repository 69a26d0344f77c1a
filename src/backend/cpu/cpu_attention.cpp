// backend/cpu/cpu_attention.cpp — RoPE with the paged KV-cache write, and paged causal attention
// over a variable-length batch, on the CPU.
//
// The cache is F32, or F8_E4M3 (--kv-cache-dtype fp8): written rounded to e4m3 with the layer's
// scale, decoded on every read.
//
// These read the step metadata exactly as a GPU backend does (query_start_loc, seq_lens,
// block_table, slot_mapping) and check every value they use, so a metadata bug shows up here as
// an error that names the field, not as silently different numbers.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_math.h"

namespace fg {

namespace {

struct CacheGeometry {
  int64_t num_blocks, block_size, num_kv_heads, head_dim;
  explicit CacheGeometry(const KvCacheLayer& cache)
      : num_blocks(cache.k.dim(0)), block_size(cache.k.dim(1)), num_kv_heads(cache.k.dim(2)),
        head_dim(cache.k.dim(3)) {}
  int64_t slots() const { return num_blocks * block_size; }
  int64_t slot_stride() const { return num_kv_heads * head_dim; }
};

// A cache is F32, or F8_E4M3 holding e4m3(clamp(x / scale)) (KvCacheLayer).
void require_cache(const Tensor& t, const char* what) {
  FG_CHECK(t.dtype == DType::kF32 || t.dtype == DType::kF8E4M3, "cpu backend: {} must be F32 or F8_E4M3, got {}",
           what, dtype_name(t.dtype));
}

// Writes `count` values of a token's k or v to the cache at element `offset`.
void store_cache(const Tensor& cache, int64_t offset, const float* x, int64_t count, float scale) {
  if (cache.dtype == DType::kF32) {
    std::copy_n(x, count, cache.as<float>() + offset);
    return;
  }
  uint8_t* dst = cache.as<uint8_t>() + offset;
  for (int64_t e = 0; e < count; ++e) dst[e] = float_to_e4m3(std::fmin(std::fmax(x[e] / scale, -kE4M3Max), kE4M3Max));
}

// The `count` cached values at element `offset` as fp32: in place for an F32 cache, else decoded
// into `buffer`.
const float* load_cache(const Tensor& cache, int64_t offset, int64_t count, float scale, std::vector<float>& buffer) {
  if (cache.dtype == DType::kF32) return cache.as<const float>() + offset;
  buffer.resize(static_cast<size_t>(count));
  const uint8_t* src = cache.as<const uint8_t>() + offset;
  for (int64_t e = 0; e < count; ++e) buffer[e] = e4m3_to_float(src[e]) * scale;
  return buffer.data();
}

// Rotate-half RoPE of one head: pairs (i, i + hd/2) turn by the angle of frequency i.
void rotate_head(float* x, const float* cos, const float* sin, int64_t half) {
  for (int64_t i = 0; i < half; ++i) {
    float a = x[i], b = x[i + half];
    x[i] = a * cos[i] - b * sin[i];
    x[i + half] = b * cos[i] + a * sin[i];
  }
}

}  // namespace

void CpuBackend::rope_and_cache_write_now(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                                      const Tensor& slot_mapping, const Tensor& rope_cos_sin,
                                      const KvCacheLayer& cache) {
  cpu::require_f32(q, "rope q");
  cpu::require_f32(k, "rope k");
  cpu::require_f32(v, "rope v");
  require_cache(cache.k, "k cache");
  require_cache(cache.v, "v cache");
  cpu::require_i32(positions, "positions");
  FG_CHECK(slot_mapping.dtype == DType::kI64, "cpu backend: slot_mapping must be I64");
  const CacheGeometry geo(cache);
  const int64_t n = q.dim(0), hd = geo.head_dim, half = hd / 2;
  const int64_t nh = q.dim(1) / hd, nkv = geo.num_kv_heads, max_positions = rope_cos_sin.dim(0);
  FG_ASSERT(k.same_shape({n, nkv * hd}) && v.same_shape({n, nkv * hd}) && rope_cos_sin.dim(1) == hd);
  FG_ASSERT(positions.dim(0) >= n && slot_mapping.dim(0) >= n);
  const int32_t* pos = positions.as<const int32_t>();
  const int64_t* slots = slot_mapping.as<const int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    FG_CHECK(pos[i] >= 0 && pos[i] < max_positions, "positions[{}] = {} is outside [0, {})", i, pos[i],
             max_positions);
    FG_CHECK(slots[i] < geo.slots(), "slot_mapping[{}] = {} is past the cache's {} slots", i, slots[i], geo.slots());
    FG_CHECK(slots[i] < 0 || slots[i] >= geo.block_size, "slot_mapping[{}] = {} falls in the null block 0", i,
             slots[i]);
  }

  pool_.parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float* cos = rope_cos_sin.as<const float>() + pos[i] * hd;
      const float* sin = cos + half;
      for (int64_t h = 0; h < nh; ++h) rotate_head(q.as<float>() + (i * nh + h) * hd, cos, sin, half);
      for (int64_t h = 0; h < nkv; ++h) rotate_head(k.as<float>() + (i * nkv + h) * hd, cos, sin, half);
      if (slots[i] < 0) continue;  // padded token: never written (DESIGN.md contract)
      const int64_t stride = geo.slot_stride();
      store_cache(cache.k, slots[i] * stride, k.as<const float>() + i * stride, stride, cache.k_scale);
      store_cache(cache.v, slots[i] * stride, v.as<const float>() + i * stride, stride, cache.v_scale);
    }
  });
}

void CpuBackend::attention_now(const Tensor& q, const KvCacheLayer& cache, const AttentionMetadata& meta, float scale,
                           const Tensor& out) {
  cpu::require_f32(q, "attention q");
  cpu::require_f32(out, "attention output");
  cpu::require_i32(meta.query_start_loc, "query_start_loc");
  cpu::require_i32(meta.seq_lens, "seq_lens");
  cpu::require_i32(meta.block_table, "block_table");
  require_cache(cache.k, "k cache");
  require_cache(cache.v, "v cache");
  const CacheGeometry geo(cache);
  const int64_t n = q.dim(0), hd = geo.head_dim, nh = q.dim(1) / hd, nkv = geo.num_kv_heads;
  const int64_t group = nh / nkv, num_reqs = meta.seq_lens.dim(0), max_blocks = meta.block_table.dim(1);
  FG_ASSERT(out.same_shape({n, nh * hd}) && meta.query_start_loc.dim(0) == num_reqs + 1);
  FG_ASSERT(meta.block_table.dim(0) >= num_reqs);
  const int32_t* qsl = meta.query_start_loc.as<const int32_t>();
  const int32_t* seq_lens = meta.seq_lens.as<const int32_t>();
  const int32_t* table = meta.block_table.as<const int32_t>();

  // Which request owns each query token; -1 for tokens outside every request.
  std::vector<int32_t> owner(n, -1);
  FG_CHECK(qsl[0] >= 0, "query_start_loc[0] = {} is negative", qsl[0]);
  for (int64_t r = 0; r < num_reqs; ++r) {
    FG_CHECK(qsl[r + 1] >= qsl[r] && qsl[r + 1] <= n,
             "query_start_loc[{}] = {} must be non-decreasing and at most the {} tokens of the step", r + 1,
             qsl[r + 1], n);
    const int64_t num_query = qsl[r + 1] - qsl[r];
    FG_CHECK(seq_lens[r] >= num_query && (seq_lens[r] + geo.block_size - 1) / geo.block_size <= max_blocks,
             "seq_lens[{}] = {} must cover its {} query tokens and fit {} blocks of {}", r, seq_lens[r], num_query,
             max_blocks, geo.block_size);
    for (int64_t b = 0; b < (seq_lens[r] + geo.block_size - 1) / geo.block_size; ++b) {
      int32_t block = table[r * max_blocks + b];
      FG_CHECK(block >= 0 && block < geo.num_blocks, "block_table[{}][{}] = {} is outside [0, {})", r, b, block,
               geo.num_blocks);
    }
    for (int64_t t = qsl[r]; t < qsl[r + 1]; ++t) owner[t] = static_cast<int32_t>(r);
  }

  pool_.parallel_for(n * nh, [&](int64_t begin, int64_t end) {
    std::vector<float> scores, decoded;
    std::vector<float> acc(hd);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t token = item / nh, head = item % nh, kv_head = head / group;
      const int32_t r = owner[token];
      if (r < 0) continue;
      const int64_t num_query = qsl[r + 1] - qsl[r];
      const int64_t visible = seq_lens[r] - num_query + (token - qsl[r]) + 1;  // causal horizon
      const float* qv = q.as<const float>() + (token * nh + head) * hd;
      auto slot_of = [&](int64_t t) {
        return static_cast<int64_t>(table[r * max_blocks + t / geo.block_size]) * geo.block_size + t % geo.block_size;
      };
      scores.resize(visible);
      float max_score = -INFINITY;
      for (int64_t t = 0; t < visible; ++t) {
        const float* kv = load_cache(cache.k, (slot_of(t) * nkv + kv_head) * hd, hd, cache.k_scale, decoded);
        scores[t] = cpu::dot(qv, kv, hd) * scale;
        max_score = std::max(max_score, scores[t]);
      }
      float sum = 0.0f;
      for (int64_t t = 0; t < visible; ++t) {
        scores[t] = std::exp(scores[t] - max_score);
        sum += scores[t];
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t t = 0; t < visible; ++t) {
        const float p = scores[t] / sum;
        const float* vv = load_cache(cache.v, (slot_of(t) * nkv + kv_head) * hd, hd, cache.v_scale, decoded);
        for (int64_t d = 0; d < hd; ++d) acc[d] += p * vv[d];
      }
      std::copy(acc.begin(), acc.end(), out.as<float>() + (token * nh + head) * hd);
    }
  });
}

}  // namespace fg
