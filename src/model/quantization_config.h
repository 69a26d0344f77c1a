// model/quantization_config.h — the FP8 checkpoint formats fullgraph loads, read from config.json.
//
// Two spellings of the same arithmetic are accepted: compressed-tensors (llm-compressor's output,
// e.g. RedHatAI's *-FP8 and *-FP8-dynamic models) and quant_method "fp8" (vLLM's Fp8Config, as
// AutoFP8 writes it). Both store each quantized linear's weight as float8_e4m3fn with a scale
// (weight = fp8 * scale) and say whether the linear's input is rounded to FP8 too, with a scale
// per token computed at run time or one fixed scale from the checkpoint. Everything else
// (integer or block/group scales, asymmetric schemes, FP8 KV caches) is refused naming the field.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json/json_view.h"

namespace fg {

// How many scales a quantized weight [out, in] carries: one (shape [] or [1]) or one per output
// row (shape [out, 1]).
enum class WeightScaleGranularity { kPerTensor, kPerChannel };

// What a quantized linear does to its input x [n, in] before the matmul:
//   kNone: nothing (weight-only FP8);
//   kDynamicPerToken: per row, s = max|x_row| / 448, x = e4m3(x / s) * s;
//   kStaticPerTensor: the same with s = the checkpoint's input_scale, x / s clamped to ±448.
enum class ActivationScheme { kNone, kDynamicPerToken, kStaticPerTensor };

struct QuantizationConfig {
  std::string method;  // quant_method as spelled in config.json, for messages
  WeightScaleGranularity weight_scale = WeightScaleGranularity::kPerTensor;
  ActivationScheme activations = ActivationScheme::kNone;
  // Modules left unquantized: exact names ("lm_head"), parents of modules
  // ("model.layers.0.mlp"), or "re:"-prefixed regular expressions matched against the whole name.
  std::vector<std::string> ignore;
  // --quantization fp8: the checkpoint's float linears are quantized as they load (a scale per
  // output channel, inputs rounded with a scale per token), not read as FP8.
  bool quantize_at_load = false;
  // kv_cache_scheme: the checkpoint holds per-layer k/v scales for an FP8 KV cache
  // (model.layers.L.self_attn.k_scale / v_scale), used with --kv-cache-dtype fp8.
  bool kv_cache_scales = false;

  // Whether the linear called `module` (e.g. "model.layers.3.self_attn.q_proj") is quantized.
  bool quantizes(const std::string& module) const;
};

// The checkpoint's quantization from the root object of config.json: nullopt when it has neither
// quantization_config nor compression_config (compressed-tensors' older key).
std::optional<QuantizationConfig> parse_quantization_config(const JsonView& root);

std::string_view activation_scheme_name(ActivationScheme scheme);

// The quantization of --quantization fp8 (quantize_at_load): every q/k/v/o and gate/up/down
// projection, per-channel weight scales, dynamic per-token activations; embeddings, norms and the
// LM head stay as they are.
QuantizationConfig quantize_at_load_config();

}  // namespace fg
