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
  // Under tensor parallelism (tensor_parallel_size > 1), `config` and `weights` are one rank's
  // (model/tensor_parallel.h) and `backend` holds that rank's communicator: the outputs of o_proj
  // and down_proj are all-reduced before they meet the residual stream, and the rank's LM head
  // slice is gathered into the full logits, so every rank returns the same logits.
  LlamaModel(ModelConfig config, ModelWeights weights, Backend& backend, int64_t max_tokens, int64_t max_logits,
             int tensor_parallel_size = 1);

  const ModelConfig& config() const { return config_; }
  Backend& backend() const { return backend_; }
  int64_t max_tokens() const { return max_tokens_; }
  int64_t max_logits() const { return max_logits_; }

  // Runs one step: every token of `step` through all layers (writing its K and V to the cache),
  // then the LM head on the rows of step.logits_indices. Returns F32 [num_logits, V], a view of a
  // buffer that the next forward() overwrites.
  Tensor forward(const StepInputs& step, const KvCache& kv);

  int tensor_parallel_size() const { return tensor_parallel_size_; }

  // Gives an FP8 cache the weights' per-layer k/v scales (LayerWeights::k_cache_scale, the
  // checkpoint's or 1.0); a cache of any other dtype keeps none. Call once, before the first step.
  void use_kv_cache_scales(KvCache& kv) const;

  // Rows [0, rows) of the logits buffer as the last forward() left them.
  Tensor logits(int64_t rows) const { return logits_.tensor.rows(0, rows); }
  // Overwrites every activation buffer with `byte` (tests poison them so that a kernel reading a
  // row nothing wrote shows up as NaN).
  void fill_activations(uint8_t byte);

 private:
  // One layer with FP8 linears (LayerWeights::any_fp8; llama_fp8_layer.cpp): the layer loop's ops
  // with each FP8 linear's input rounded to e4m3 first, by the norm or SiLU-and-multiply that
  // produces it where the backend fuses that.
  void fp8_layer(int64_t l, const StepInputs& step, const KvCache& kv, int64_t n);
  // residual += x · weightᵀ; under tensor parallelism the rank's partial product is all-reduced
  // first (in proj_out), so the residual stream stays the same on every rank.
  void row_parallel_residual_add(const Tensor& x, const Tensor& weight, const Tensor& proj_out,
                                 const Tensor& residual);
  // The FP8 parts over rms_norm(x): one rounding (fused into the norm where the backend can) where
  // every part rounds its input alike; else the norm, then a rounding and a matmul per part.
  void normed_fp8_group(const Tensor& x, const Tensor& norm_weight, const std::vector<Fp8LinearPart>& parts,
                        const std::vector<LinearInput>& inputs, int64_t n);
  // The rounded-input buffers viewed as [n, width] rows.
  Fp8Rows fp8_rows(int64_t n, int64_t width) const;

  ModelConfig config_;
  ModelWeights weights_;
  Backend& backend_;
  int64_t max_tokens_;
  int64_t max_logits_;
  int tensor_parallel_size_;
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
  // A linear's input rounded to FP8, allocated only for models with FP8 linears: the e4m3 values
  // F8_E4M3 [T * max(H, nh * hd, I)] flat (viewed as [n, the linear's input width]) and the row
  // scales F32 [T].
  Allocation fp8_values_, fp8_scales_;
  Allocation selected_;         // [max_logits, H] residual rows that produce logits
  Allocation selected_normed_;  // [max_logits, H] the same rows after the final norm
  Allocation logits_;        // F32 [max_logits, V]
  Allocation shard_logits_;  // F32 [max_logits, V / tensor_parallel_size]: this rank's, before the gather (TP only)
};

}  // namespace fg
