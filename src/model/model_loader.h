// model/model_loader.h — from a checkpoint folder, a GGUF file (or the built-in default) to config
// + weights.
#pragma once

#include <string>

#include "backend/backend.h"
#include "model/config.h"
#include "model/weights.h"

namespace fg {

enum class LoadFormat {
  kAuto,         // safetensors from the folder, or the GGUF file's tensors
  kSafetensors,  // same, spelled out
  kDummy,        // deterministic random weights for the folder's config.json; no weights file read
};
LoadFormat parse_load_format(const std::string& name);

struct LoadedModel {
  ModelConfig config;
  ModelWeights weights;
  std::string source;  // the folder, or "built-in default"
};

struct LoadOptions {
  LoadFormat format = LoadFormat::kAuto;
  bool round_rope_inv_freq_to_bf16 = false;  // see RopeConfig
  uint64_t dummy_seed = 0;
  // --quantization fp8: quantize the float linears at load (model/quantization_config.h,
  // quantize_at_load_config). Refused for checkpoints that are quantized already.
  bool quantize_fp8 = false;
};

// `dir` is a folder or a .gguf file (model_path.h resolves names to them); an empty `dir` selects
// the built-in tiny default model (dummy weights, nothing downloaded). A GGUF load logs the ggml
// types it dequantized and how long that took.
LoadedModel load_model(const std::string& dir, const LoadOptions& options, Backend& backend);

// The config of the model at `path`: a folder's config.json, or a GGUF file's metadata.
ModelConfig load_model_path_config(const std::string& path);

// The config.json of the built-in default model.
const char* builtin_model_config_json();

}  // namespace fg
