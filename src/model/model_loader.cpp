// model/model_loader.cpp — load_model and the built-in default model.
#include "model/model_loader.h"

#include <filesystem>

#include "core/log.h"
#include "model/gguf.h"
#include "model/gguf_config.h"
#include "model/gguf_weights.h"
#include "model/model_path.h"
#include "model/safetensors.h"

namespace fg {

LoadFormat parse_load_format(const std::string& name) {
  if (name == "auto") return LoadFormat::kAuto;
  if (name == "safetensors") return LoadFormat::kSafetensors;
  if (name == "dummy") return LoadFormat::kDummy;
  fail("unknown --load-format '{}' (expected auto, safetensors or dummy)", name);
}

const char* builtin_model_config_json() {
  // A tiny Llama: small enough to run anywhere in milliseconds, shaped like the real thing (GQA,
  // llama3 RoPE scaling, untied LM head) so the default exercises the whole layer loop.
  return R"({
  "architectures": ["LlamaForCausalLM"],
  "model_type": "llama",
  "hidden_size": 128,
  "intermediate_size": 344,
  "num_hidden_layers": 2,
  "num_attention_heads": 4,
  "num_key_value_heads": 2,
  "head_dim": 32,
  "vocab_size": 512,
  "max_position_embeddings": 2048,
  "rms_norm_eps": 1e-5,
  "rope_theta": 500000.0,
  "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0, "original_max_position_embeddings": 256},
  "tie_word_embeddings": false,
  "bos_token_id": 510,
  "eos_token_id": 511,
  "dtype": "bfloat16"
})";
}

namespace {

// --quantization fp8 on a config: the at-load quantization, unless the checkpoint has its own.
void apply_quantization_option(ModelConfig& config, const LoadOptions& options, const std::string& source) {
  if (!options.quantize_fp8) return;
  FG_CHECK(!config.quantization, "--quantization fp8: {} is quantized already (quantization_config '{}'); its own "
           "scales are used without the flag", source, config.quantization ? config.quantization->method : "");
  config.quantization = quantize_at_load_config();
}

}  // namespace

LoadedModel load_model(const std::string& dir, const LoadOptions& options, Backend& backend) {
  LoadedModel out;
  if (dir.empty()) {
    out.config = parse_model_config(builtin_model_config_json(), "built-in default config.json");
    out.config.rope.round_inv_freq_to_bf16 = options.round_rope_inv_freq_to_bf16;
    apply_quantization_option(out.config, options, "the built-in model");
    out.weights = dummy_weights(out.config, backend, options.dummy_seed);
    out.source = "built-in default";
    return out;
  }
  check_model_folder(dir);
  if (is_gguf_file(dir)) {
    FG_CHECK(options.format != LoadFormat::kSafetensors, "--load-format safetensors: {} is a GGUF file", dir);
    auto file = GgufFile::open(dir);
    out.config = gguf_model_config(*file);
    out.config.rope.round_inv_freq_to_bf16 = options.round_rope_inv_freq_to_bf16;
    apply_quantization_option(out.config, options, dir);
    out.source = dir;
    if (options.format == LoadFormat::kDummy) {
      out.weights = dummy_weights(out.config, backend, options.dummy_seed);
    } else {
      GgufLoadReport report;
      out.weights = load_gguf_weights(out.config, file, backend, &report);
      log::info("{}: dequantized {}", dir, report.describe());
    }
    return out;
  }
  out.config = load_model_config((std::filesystem::path(dir) / "config.json").string());
  out.config.rope.round_inv_freq_to_bf16 = options.round_rope_inv_freq_to_bf16;
  apply_quantization_option(out.config, options, dir);
  out.source = dir;
  if (options.format == LoadFormat::kDummy) {
    out.weights = dummy_weights(out.config, backend, options.dummy_seed);
  } else {
    auto checkpoint = std::make_shared<const Checkpoint>(Checkpoint::open(dir));
    out.weights = load_weights(out.config, checkpoint, backend);
    if (const std::optional<QuantizationConfig>& q = out.config.quantization; q && !q->quantize_at_load) {
      log::info("{}: FP8 checkpoint ({}, {} weight scales, {} activations): {}", dir, q->method,
                q->weight_scale == WeightScaleGranularity::kPerChannel ? "per-channel" : "per-tensor",
                activation_scheme_name(q->activations),
                q->activations == ActivationScheme::kNone
                    ? "weight-only, so its linears run dequantized"
                    : "its linears run in FP8 (a q/k/v or gate/up group partly in the ignore list runs dequantized)");
    }
  }
  return out;
}

ModelConfig load_model_path_config(const std::string& path) {
  check_model_folder(path);
  if (is_gguf_file(path)) return gguf_model_config(*GgufFile::open(path));
  return load_model_config((std::filesystem::path(path) / "config.json").string());
}

}  // namespace fg
