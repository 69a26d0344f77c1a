// model/llama_model.cpp — the layer loop.
#include "model/llama_model.h"

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
                       int64_t max_logits)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      backend_(backend),
      max_tokens_(max_tokens),
      max_logits_(max_logits),
      attention_scale_(1.0f / std::sqrt(static_cast<float>(config_.head_dim))) {
  FG_CHECK(max_tokens >= 1 && max_logits >= 1, "a model needs room for at least one token and one logits row");
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
  gate_ = backend.allocate(act, {T, c.intermediate_size});
  up_ = backend.allocate(act, {T, c.intermediate_size});
  mlp_act_ = backend.allocate(act, {T, c.intermediate_size});
  selected_ = backend.allocate(act, {max_logits, c.hidden_size});
  logits_ = backend.allocate(DType::kF32, {max_logits, c.vocab_size});
}

void LlamaModel::fill_activations(uint8_t byte) {
  for (const Allocation* a : {&residual_, &normed_, &q_, &k_, &v_, &attn_out_, &proj_out_, &gate_, &up_, &mlp_act_,
                              &selected_, &logits_}) {
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
  const Tensor gate = gate_.tensor.rows(0, n), up = up_.tensor.rows(0, n), mlp_act = mlp_act_.tensor.rows(0, n);

  b.embedding(step.input_ids, weights_.embed_tokens, residual);
  b.rms_norm(residual, weights_.layers[0].input_norm, eps, normed);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const LayerWeights& w = weights_.layers[l];

    // Attention block.
    // One matmul where the backend can (the loader places q/k/v back to back on a device).
    b.linear_group(normed, {{&w.q_proj, c.qkv_bias ? &w.q_bias : nullptr, q},
                            {&w.k_proj, c.qkv_bias ? &w.k_bias : nullptr, k},
                            {&w.v_proj, c.qkv_bias ? &w.v_bias : nullptr, v}});
    if (c.qk_norm) {
      b.head_rms_norm(q, w.q_norm, eps);
      b.head_rms_norm(k, w.k_norm, eps);
    }
    b.rope_and_cache_write(q, k, v, step.positions, step.slot_mapping, rope_cos_sin_.tensor, kv.layers[l]);
    b.attention(q, kv.layers[l], step.attention, attention_scale_, attn_out);
    b.linear(attn_out, w.o_proj, nullptr, proj_out);
    b.add_rms_norm(residual, proj_out, w.post_attention_norm, eps, normed);

    // MLP block; its residual add is fused with the next layer's input norm (or the final norm).
    // One matmul over gate and up where the backend can, SiLU-and-multiply fused where it can.
    b.linear_silu_mul(normed, w.gate_proj, w.up_proj, gate, up, mlp_act);
    b.linear(mlp_act, w.down_proj, nullptr, proj_out);
    const Tensor& next_norm = l + 1 < c.num_layers ? weights_.layers[l + 1].input_norm : weights_.final_norm;
    b.add_rms_norm(residual, proj_out, next_norm, eps, normed);
  }

  const Tensor selected = selected_.tensor.rows(0, m);
  const Tensor logits = logits_.tensor.rows(0, m);
  b.gather_rows(normed, step.logits_indices, selected);
  b.linear(selected, weights_.lm_head, nullptr, logits);
  return logits;
}

}  // namespace fg
