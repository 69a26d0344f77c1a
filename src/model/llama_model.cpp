// model/llama_model.cpp — the layer loop.
#include "model/llama_model.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/rope.h"

namespace fg {

KvCache allocate_kv_cache(Backend& backend, const ModelConfig& config, int64_t num_blocks, int64_t block_size,
                          DType dtype) {
  FG_CHECK(num_blocks >= 2, "the KV cache needs at least 2 blocks (block 0 is the null block), got {}", num_blocks);
  FG_CHECK(block_size >= 1, "KV block size must be positive, got {}", block_size);
  KvCache kv;
  kv.num_blocks = num_blocks;
  kv.block_size = block_size;
  for (int64_t l = 0; l < config.num_layers; ++l) {
    Allocation k = backend.allocate(dtype, {num_blocks, block_size, config.num_kv_heads, config.head_dim});
    Allocation v = backend.allocate(dtype, {num_blocks, block_size, config.num_kv_heads, config.head_dim});
    kv.layers.push_back({k.tensor, v.tensor});
    kv.memory.push_back(k.memory);
    kv.memory.push_back(v.memory);
  }
  return kv;
}

LlamaModel::LlamaModel(ModelConfig config, ModelWeights weights, Backend& backend, int64_t max_tokens,
                       int64_t max_logits, int tensor_parallel_size)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      backend_(backend),
      max_tokens_(max_tokens),
      max_logits_(max_logits),
      tensor_parallel_size_(tensor_parallel_size),
      attention_scale_(1.0f / std::sqrt(static_cast<float>(config_.head_dim))) {
  FG_CHECK(max_tokens >= 1 && max_logits >= 1, "a model needs room for at least one token and one logits row");
  FG_CHECK(tensor_parallel_size >= 1, "tensor_parallel_size must be at least 1, got {}", tensor_parallel_size);
  const ModelConfig& c = config_;
  const DType act = backend.activation_dtype();
  const int64_t T = max_tokens;

  const std::vector<float> table = rope_cos_sin_table(c.rope, c.head_dim, c.max_position_embeddings);
  rope_cos_sin_ = backend.allocate(DType::kF32, {c.max_position_embeddings, c.head_dim});
  backend.copy_from_host(rope_cos_sin_.tensor, table.data());

  residual_ = backend.allocate(act, {T, c.hidden_size});
  normed_ = backend.allocate(act, {T, c.hidden_size});
  q_ = backend.allocate(act, {T, c.q_size()});
  k_ = backend.allocate(act, {T, c.kv_size()});
  v_ = backend.allocate(act, {T, c.kv_size()});
  attn_out_ = backend.allocate(act, {T, c.q_size()});
  proj_out_ = backend.allocate(act, {T, c.hidden_size});
  span_ = backend.allocate(act, {T, std::max(2 * c.intermediate_size, c.q_size() + 2 * c.kv_size())});
  mlp_act_ = backend.allocate(act, {T, c.intermediate_size});
  if (std::any_of(weights_.layers.begin(), weights_.layers.end(), [](const LayerWeights& w) { return w.any_fp8(); })) {
    fp8_values_ = backend.allocate(DType::kF8E4M3, {T * std::max({c.hidden_size, c.q_size(), c.intermediate_size})});
    fp8_scales_ = backend.allocate(DType::kF32, {T});
  }
  selected_ = backend.allocate(act, {max_logits, c.hidden_size});
  selected_normed_ = backend.allocate(act, {max_logits, c.hidden_size});
  logits_ = backend.allocate(DType::kF32, {max_logits, c.vocab_size});
  if (tensor_parallel_size_ > 1) {
    FG_CHECK(fp8_values_.memory == nullptr, "tensor parallelism: FP8 layers are not sharded yet");
    const int64_t shard_vocab = c.vocab_size / tensor_parallel_size_;
    FG_CHECK(shard_vocab * tensor_parallel_size_ == c.vocab_size && weights_.lm_head.dim(0) == shard_vocab,
             "tensor parallelism over {} ranks: the LM head has {} rows, not vocab_size {} / {}", tensor_parallel_size_,
             weights_.lm_head.dim(0), c.vocab_size, tensor_parallel_size_);
    shard_logits_ = backend.allocate(DType::kF32, {max_logits, shard_vocab});
  }
}

void LlamaModel::row_parallel_residual_add(const Tensor& x, const Tensor& weight, const Tensor& proj_out,
                                           const Tensor& residual) {
  if (tensor_parallel_size_ == 1) {
    backend_.linear_residual_add(x, weight, proj_out, residual);
    return;
  }
  backend_.linear(x, weight, nullptr, proj_out);
  backend_.all_reduce_sum(proj_out);
  backend_.add(residual, proj_out);
}

void LlamaModel::use_kv_cache_scales(KvCache& kv) const {
  FG_CHECK(kv.layers.size() == weights_.layers.size(), "a KV cache of {} layers for a model of {}", kv.layers.size(),
           weights_.layers.size());
  for (size_t l = 0; l < kv.layers.size(); ++l) {
    if (kv.layers[l].k.dtype != DType::kF8E4M3) continue;
    kv.layers[l].k_scale = weights_.layers[l].k_cache_scale;
    kv.layers[l].v_scale = weights_.layers[l].v_cache_scale;
  }
}

void LlamaModel::fill_activations(uint8_t byte) {
  for (const Allocation* a : {&residual_, &normed_, &q_, &k_, &v_, &attn_out_, &proj_out_, &span_, &mlp_act_,
                              &fp8_values_, &fp8_scales_, &selected_, &selected_normed_, &logits_, &shard_logits_}) {
    if (!a->memory) continue;
    const std::vector<uint8_t> bytes(a->tensor.nbytes(), byte);
    backend_.copy_from_host(a->tensor, bytes.data());
  }
  backend_.synchronize();
}

Tensor LlamaModel::forward(const StepInputs& step, const KvCache& kv) {
  const ModelConfig& c = config_;
  const int64_t n = step.input_ids.dim(0), m = step.logits_indices.dim(0);
  FG_CHECK(n >= 1 && n <= max_tokens_, "a step of {} tokens does not fit the model's {} token buffers", n,
           max_tokens_);
  FG_CHECK(m <= max_logits_, "a step asking {} logits rows does not fit the model's {}", m, max_logits_);
  FG_CHECK(static_cast<int64_t>(kv.layers.size()) == c.num_layers, "the KV cache has {} layers, the model {}",
           kv.layers.size(), c.num_layers);
  Backend& b = backend_;
  const float eps = static_cast<float>(c.rms_norm_eps);

  const Tensor residual = residual_.tensor.rows(0, n);
  const Tensor normed = normed_.tensor.rows(0, n);
  const Tensor q = q_.tensor.rows(0, n), k = k_.tensor.rows(0, n), v = v_.tensor.rows(0, n);
  const Tensor attn_out = attn_out_.tensor.rows(0, n);
  const Tensor proj_out = proj_out_.tensor.rows(0, n);
  const Tensor mlp_act = mlp_act_.tensor.rows(0, n);
  // The span buffer flat, so that a step's [n, width] tensors lie in it back to back.
  const Tensor span = span_.tensor.view({span_.tensor.numel()});
  const int64_t I = c.intermediate_size, qkv_width = c.q_size() + 2 * c.kv_size();
  const Tensor gate = span.rows(0, n * I).view({n, I}), up = span.rows(n * I, n * I).view({n, I});
  const Tensor qkv_span = span.rows(0, n * qkv_width).view({n, qkv_width});

  // The residual stream meets the matmuls in four ops per layer, which a backend may fuse into
  // them: the norm before a block into its first matmul, the block's residual add into its last.
  b.embedding(step.input_ids, weights_.embed_tokens, residual);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const LayerWeights& w = weights_.layers[l];
    if (w.any_fp8()) {
      fp8_layer(l, step, kv, n);
      continue;
    }

    // Attention block. q/k/v as one matmul where the backend can (the loader places them back to
    // back on a device).
    // Without q/k norms, RoPE and the cache write may ride in the matmul's store.
    const std::vector<LinearPart> qkv = {{&w.q_proj, c.qkv_bias ? &w.q_bias : nullptr, q},
                                         {&w.k_proj, c.qkv_bias ? &w.k_bias : nullptr, k},
                                         {&w.v_proj, c.qkv_bias ? &w.v_bias : nullptr, v}};
    if (c.qk_norm) {
      b.rms_norm_linear_group(residual, w.input_norm, eps, normed, qkv_span, qkv);
      b.qk_norm_rope_cache_write(q, k, v, w.q_norm, w.k_norm, eps, step.positions, step.slot_mapping,
                                 rope_cos_sin_.tensor, kv.layers[l]);
    } else {
      b.rms_norm_qkv_rope_cache_write(residual, w.input_norm, eps, normed, qkv_span, qkv, step.positions,
                                      step.slot_mapping, rope_cos_sin_.tensor, kv.layers[l]);
    }
    b.attention(q, kv.layers[l], step.attention, attention_scale_, attn_out);
    row_parallel_residual_add(attn_out, w.o_proj, proj_out, residual);

    // MLP block: gate and up as one matmul where the backend can, SiLU-and-multiply fused where
    // it can.
    b.rms_norm_linear_silu_mul(residual, w.post_attention_norm, eps, normed, w.gate_proj, w.up_proj, gate, up,
                               mlp_act);
    row_parallel_residual_add(mlp_act, w.down_proj, proj_out, residual);
  }

  // The final norm of the rows that produce logits only.
  const Tensor selected = selected_.tensor.rows(0, m);
  const Tensor selected_normed = selected_normed_.tensor.rows(0, m);
  const Tensor logits = logits_.tensor.rows(0, m);
  b.gather_rows(residual, step.logits_indices, selected);
  b.rms_norm(selected, weights_.final_norm, eps, selected_normed);
  if (tensor_parallel_size_ == 1) {
    b.linear(selected_normed, weights_.lm_head, nullptr, logits);
    return logits;
  }
  // Vocabulary parallel: this rank's columns of the logits, then every rank's gathered.
  const Tensor shard_logits = shard_logits_.tensor.rows(0, m);
  b.linear(selected_normed, weights_.lm_head, nullptr, shard_logits);
  b.all_gather_columns(shard_logits, logits);
  return logits;
}

}  // namespace fg
