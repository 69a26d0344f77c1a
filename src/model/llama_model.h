// model/llama_model.h — the Llama-family forward pass, written once as a straight layer loop
// against the Backend op set. Llama, Mistral, Qwen2 and Qwen3 differ only in which optional
// tensors their config enables (q/k/v biases, q/k norms, a tied LM head).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "model/config.h"
#include "model/step.h"
#include "model/weights.h"

namespace fg {

class LlamaModel {
 public:
  // Activations are allocated once, for steps of up to max_tokens tokens and max_logits rows.
  LlamaModel(ModelConfig config, ModelWeights weights, Backend& backend, int64_t max_tokens, int64_t max_logits);

  const ModelConfig& config() const { return config_; }
  Backend& backend() const { return backend_; }
  int64_t max_tokens() const { return max_tokens_; }
  int64_t max_logits() const { return max_logits_; }

  // Runs one step: every token of `step` through all layers (writing its K and V to the cache),
  // then the LM head on the rows of step.logits_indices. Returns F32 [num_logits, V], a view of a
  // buffer that the next forward() overwrites.
  Tensor forward(const StepInputs& step, const KvCache& kv);

  // Rows [0, rows) of the logits buffer as the last forward() left them.
  Tensor logits(int64_t rows) const { return logits_.tensor.rows(0, rows); }
  // Overwrites every activation buffer with `byte` (tests poison them so that a kernel reading a
  // row nothing wrote shows up as NaN).
  void fill_activations(uint8_t byte);

 private:
  // One layer of an FP8 checkpoint that quantizes activations: the layer loop's ops, unfused,
  // with each linear's input rounded first (the rounding sits between a norm and its matmul, so
  // the fused norm + matmul ops do not apply).
  void fp8_input_layer(int64_t l, const StepInputs& step, const KvCache& kv, int64_t n);
  // x itself, or x rounded per `in` into fp8_input_ (x [n, width]).
  Tensor linear_input(const Tensor& x, const LinearInput& in);

  ModelConfig config_;
  ModelWeights weights_;
  Backend& backend_;
  int64_t max_tokens_;
  int64_t max_logits_;
  float attention_scale_;

  // Named intermediates, so any of them can be dumped: [max_tokens, features] each.
  Allocation rope_cos_sin_;  // F32 [max_position_embeddings, hd]
  Allocation residual_;      // [T, H] the residual stream
  Allocation normed_;        // [T, H] input of the next sublayer (scratch where the backend fuses the norm)
  Allocation q_, k_, v_;     // [T, nh * hd], [T, nkv * hd], [T, nkv * hd]
  Allocation attn_out_;      // [T, nh * hd]
  Allocation proj_out_;      // [T, H] output of o_proj and down_proj (scratch where the backend fuses the add)
  // [T, max(2I, q + 2 kv)]: the gate and up outputs of a step of n tokens, back to back (gate the
  // first n * I elements, up the next), so a backend may run the gate/up span into them as one
  // matmul; also the q/k/v span's scratch (Backend::rms_norm_qkv_rope_cache_write and
  // rms_norm_linear_group), which is free then: the MLP of the layer before has used its gate and
  // up.
  Allocation span_;
  Allocation mlp_act_;       // [T, I]
  // [T * max(H, nh * hd, I)] flat: a linear's input rounded to FP8 (allocated only for checkpoints
  // that quantize activations; viewed as [n, the linear's input width]).
  Allocation fp8_input_;
  Allocation selected_;         // [max_logits, H] residual rows that produce logits
  Allocation selected_normed_;  // [max_logits, H] the same rows after the final norm
  Allocation logits_;        // F32 [max_logits, V]
};

}  // namespace fg
