// model/weights.h — the tensors of a Llama-family model: which names and shapes a config
// implies, loading them from a checkpoint (every shape checked), and deterministic dummy weights.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/config.h"
#include "model/tensor_parallel.h"

namespace fg {

class Checkpoint;

// What a linear does to its input before the matmul: nothing, except in FP8 linears
// (model/quantization_config.h), where it is rounded to e4m3 with a scale per token or the
// checkpoint's fixed scale (Backend::quantize_fp8).
struct LinearInput {
  ActivationScheme scheme = ActivationScheme::kNone;
  float scale = 0.0f;  // kStaticPerTensor: the checkpoint's input_scale

  // Backend::quantize_fp8's static_scale: the fixed scale, or 0 for a scale per row.
  float static_scale() const { return scheme == ActivationScheme::kStaticPerTensor ? scale : 0.0f; }
  bool operator==(const LinearInput&) const = default;
};

struct LayerWeights {
  Tensor input_norm;          // [H]
  Tensor q_proj, q_bias;      // [nh * hd, H], [nh * hd] (bias only with qkv_bias)
  Tensor k_proj, k_bias;      // [nkv * hd, H], [nkv * hd]
  Tensor v_proj, v_bias;      // [nkv * hd, H], [nkv * hd]
  Tensor q_norm, k_norm;      // [hd] (Qwen3 only)
  Tensor o_proj;              // [H, nh * hd]
  Tensor post_attention_norm; // [H]
  Tensor gate_proj, up_proj;  // [I, H]
  Tensor down_proj;           // [H, I]
  // FP8 linears (their weight F8_E4M3): the scale of each output channel, F32 [out], and the
  // rounding of the linear's input. Undefined and kNone for the others. q/k/v are FP8 together
  // or not at all, and so are gate/up (the loader dequantizes a group's FP8 members otherwise).
  Tensor q_scale, k_scale, v_scale, o_scale, gate_scale, up_scale, down_scale;
  LinearInput q_in, k_in, v_in, o_in, gate_in, up_in, down_in;
  // An FP8 KV cache's scales for this layer (KvCacheLayer): the checkpoint's when its
  // quantization_config has kv_cache_scheme, else 1.0, as vLLM defaults them.
  float k_cache_scale = 1.0f, v_cache_scale = 1.0f;

  bool qkv_fp8() const { return q_proj.dtype == DType::kF8E4M3; }
  bool o_fp8() const { return o_proj.dtype == DType::kF8E4M3; }
  bool gate_up_fp8() const { return gate_proj.dtype == DType::kF8E4M3; }
  bool down_fp8() const { return down_proj.dtype == DType::kF8E4M3; }
  bool any_fp8() const { return qkv_fp8() || o_fp8() || gate_up_fp8() || down_fp8(); }
};

struct ModelWeights {
  Tensor embed_tokens;  // [V, H]
  std::vector<LayerWeights> layers;
  Tensor final_norm;    // [H]
  Tensor lm_head;       // [V, H]; the embedding itself when tie_word_embeddings
  std::vector<std::shared_ptr<const void>> keep_alive;  // mmaps and buffers the views point into
  // A checkpoint dtype the loader converted from, where the backend keeps weights in another
  // (Backend::weight_dtype: an F16 or F32 checkpoint on the CUDA backend runs as BF16).
  std::optional<DType> converted_from;
};

// One tensor the config implies, with its Hugging Face name and shape.
struct WeightSpec {
  std::string name;
  std::vector<int64_t> shape;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};
std::vector<WeightSpec> expected_weights(const ModelConfig& config);

// Loads and checks every weight: each expected tensor present with exactly its shape and a float
// dtype, no unexpected tensors (a few harmless leftovers such as rotary inv_freq are ignored).
// In FP8 checkpoints, the linears that config.quantization quantizes are read with their scales
// (model/fp8_weights.h) and kept in FP8 with a scale per output channel where their inputs are
// rounded too; weight-only FP8 linears, and the FP8 members of a q/k/v or gate/up group that is
// not all FP8, are dequantized to the backend's weight dtype. With config.quantization's
// quantize_at_load (--quantization fp8) the float linears are quantized on the backend.
// Errors name the tensor, its shape and the config fields that imply another.
// On a host backend the weights are views of the checkpoint's mmaps, which they keep alive.
// With an active `shard`, the weights are rank shard.rank's (model/tensor_parallel.h) of the model
// `config` describes whole: each sharded tensor's owned rows or columns are copied out of the mmap
// (row slices on a host backend stay views), nothing else of it is read; the LM head of a tied
// model is the embedding's row slice. FP8 checkpoints are not sharded.
ModelWeights load_weights(const ModelConfig& config, std::shared_ptr<const Checkpoint> checkpoint,
                          Backend& backend, const TensorParallelShard& shard = {});

// Weights built tensor by tensor: `fill` writes the spec.numel() values of one expected weight, in
// `dtype`, to host memory at `dst`, row-major in spec.shape; they are placed as load_weights places
// them (each linear group back to back). For formats whose every tensor is converted (GGUF).
// With an active `shard`, rank shard.rank's slices of them: each sharded tensor is filled whole on
// the host, then sliced (built weights are synthetic; nothing is read from a checkpoint).
ModelWeights build_weights(const ModelConfig& config, Backend& backend, DType dtype,
                           const std::function<void(const WeightSpec& spec, void* dst)>& fill,
                           const TensorParallelShard& shard = {});

// Deterministic random weights in config.dtype for any config: the same config and seed give the
// same bits on every machine. Norm weights sit near 1, matrices at a scale of 1/sqrt(fan_in).
// With an active `shard`, rank shard.rank's slices of the same weights (build_weights).
ModelWeights dummy_weights(const ModelConfig& config, Backend& backend, uint64_t seed = 0,
                           const TensorParallelShard& shard = {});

}  // namespace fg
