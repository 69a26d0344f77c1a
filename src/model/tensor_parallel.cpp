// model/tensor_parallel.cpp — the per-rank config and the weight slices of tensor parallelism.
#include "model/tensor_parallel.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace fg {

namespace {

void check_divides(int64_t value, int size, const char* field) {
  FG_CHECK(value % size == 0, "--tensor-parallel-size {}: the model's {} = {} is not divisible by it", size, field,
           value);
}

}  // namespace

ModelConfig shard_config(const ModelConfig& full, const TensorParallelShard& shard) {
  const int n = shard.size;
  FG_CHECK(n >= 1, "--tensor-parallel-size must be at least 1, got {}", n);
  FG_CHECK(shard.rank >= 0 && shard.rank < n, "tensor-parallel rank {} is outside [0, {})", shard.rank, n);
  if (n == 1) return full;
  check_divides(full.num_heads, n, "num_attention_heads");
  if (n <= full.num_kv_heads) {
    check_divides(full.num_kv_heads, n, "num_key_value_heads");
  } else {
    FG_CHECK(n % full.num_kv_heads == 0,
             "--tensor-parallel-size {}: the model's num_key_value_heads = {} neither divides into it nor divides it "
             "(KV heads are split, or replicated over ranks / num_key_value_heads ranks each)",
             n, full.num_kv_heads);
  }
  check_divides(full.intermediate_size, n, "intermediate_size");
  check_divides(full.vocab_size, n, "vocab_size");
  ModelConfig c = full;
  c.num_heads = full.num_heads / n;
  c.num_kv_heads = std::max<int64_t>(full.num_kv_heads / n, 1);
  c.intermediate_size = full.intermediate_size / n;
  return c;
}

int64_t first_kv_head(const ModelConfig& full, const TensorParallelShard& shard) {
  if (shard.size <= full.num_kv_heads) return shard.rank * (full.num_kv_heads / shard.size);
  return shard.rank / (shard.size / full.num_kv_heads);  // replicated: consecutive ranks share a head
}

WeightSlice weight_slice(const ModelConfig& full, const TensorParallelShard& shard, const std::string& name) {
  if (!shard.active()) return {};
  const ModelConfig c = shard_config(full, shard);
  const int64_t hd = full.head_dim;
  const WeightSlice q{0, shard.rank * c.q_size(), c.q_size()};
  const WeightSlice kv{0, first_kv_head(full, shard) * hd, c.kv_size()};
  const WeightSlice mlp{0, shard.rank * c.intermediate_size, c.intermediate_size};
  const auto is = [&](const char* suffix) { return name.ends_with(suffix); };
  if (is("self_attn.q_proj.weight") || is("self_attn.q_proj.bias")) return q;
  if (is("self_attn.k_proj.weight") || is("self_attn.k_proj.bias")) return kv;
  if (is("self_attn.v_proj.weight") || is("self_attn.v_proj.bias")) return kv;
  if (is("self_attn.o_proj.weight")) return {1, q.begin, q.count};
  if (is("mlp.gate_proj.weight") || is("mlp.up_proj.weight")) return mlp;
  if (is("mlp.down_proj.weight")) return {1, mlp.begin, mlp.count};
  if (name == "lm_head.weight") {
    const int64_t rows = full.vocab_size / shard.size;
    return {0, shard.rank * rows, rows};
  }
  return {};  // embeddings and norms: replicated
}

std::vector<int64_t> slice_shape(const std::vector<int64_t>& full_shape, const WeightSlice& slice) {
  if (slice.whole()) return full_shape;
  FG_ASSERT(slice.dim < static_cast<int>(full_shape.size()));
  std::vector<int64_t> shape = full_shape;
  shape[slice.dim] = slice.count;
  return shape;
}

void copy_weight_slice(const void* full, DType dtype, const std::vector<int64_t>& full_shape, const WeightSlice& slice,
                       void* dst) {
  const size_t element = dtype_size(dtype);
  int64_t numel = 1;
  for (int64_t d : full_shape) numel *= d;
  const char* src = static_cast<const char*>(full);
  if (slice.whole()) {
    std::memcpy(dst, src, static_cast<size_t>(numel) * element);
    return;
  }
  const int64_t rows = full_shape[0], cols = full_shape.size() > 1 ? numel / rows : 1;
  FG_ASSERT(slice.begin >= 0 && slice.begin + slice.count <= full_shape[slice.dim]);
  if (slice.dim == 0) {
    std::memcpy(dst, src + static_cast<size_t>(slice.begin * cols) * element,
                static_cast<size_t>(slice.count * cols) * element);
    return;
  }
  FG_ASSERT(slice.dim == 1 && full_shape.size() == 2);
  char* out = static_cast<char*>(dst);
  const size_t width = static_cast<size_t>(slice.count) * element;
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(out + r * width, src + static_cast<size_t>(r * cols + slice.begin) * element, width);
}

}  // namespace fg
