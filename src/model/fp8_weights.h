// model/fp8_weights.h — one quantized linear of an FP8 checkpoint: its F8_E4M3 weight and scales
// read and checked against quantization_config, and the weight dequantized on the host where a
// linear runs unquantized.
//
// Tensors of a quantized linear X (e.g. model.layers.0.mlp.down_proj):
//   X.weight        F8_E4M3 [out, in]
//   X.weight_scale  BF16, F16 or F32: [] or [1] per tensor, [out, 1] per channel
//   X.input_scale   the same dtypes, [] or [1]: only with static activation scales
// Dequantizing, fp8 * scale, is one fp32 multiply of two exact values: the result is what
// transformers' and vLLM's own dequantization computes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/host_buffer.h"
#include "core/thread_pool.h"
#include "model/quantization_config.h"
#include "model/weights.h"

namespace fg {

struct Fp8Linear {
  const uint8_t* weight = nullptr;    // F8_E4M3 [out, in], in the checkpoint's mmap
  std::vector<float> channel_scales;  // [out]: a per-tensor scale repeated, so both layouts run alike
  std::optional<float> input_scale;   // the checkpoint's input scale (static activations only)
  std::vector<std::string> consumed;  // the checkpoint tensors read, for the unexpected-tensor check
};

// Whether the weight `name` (a WeightSpec name) belongs to a linear that FP8 checkpoints
// quantize (q/k/v/o and gate/up/down projections), and that linear's module name.
std::optional<std::string> quantizable_linear(const std::string& weight_name);

// Reads linear `spec` (spec.name ends in ".weight") and checks it. Errors name the tensor.
Fp8Linear read_fp8_linear(const Checkpoint& checkpoint, const WeightSpec& spec, const QuantizationConfig& quant);

// The weight of `linear` [rows, cols] dequantized, e4m3 * scale, as F32.
HostBuffer dequantize_fp8_linear(const Fp8Linear& linear, int64_t rows, int64_t cols, ThreadPool& pool);

// Layer `layer`'s KV-cache scales (quantization_config kv_cache_scheme): the scalars
// model.layers.L.self_attn.k_scale and .v_scale, as llm-compressor and vLLM name them; each
// positive. Sets the layer's k_cache_scale and v_cache_scale; returns the names read.
std::vector<std::string> read_kv_cache_scales(const Checkpoint& checkpoint, int64_t layer, LayerWeights& out);

}  // namespace fg
