// model/config.h — what fullgraph needs of a Hugging Face config.json, parsed and checked.
//
// Supported: LlamaForCausalLM, MistralForCausalLM (no sliding window), Qwen2ForCausalLM and
// Qwen3ForCausalLM with SiLU MLPs, GQA, default or llama3 RoPE, unquantized or FP8 (see
// quantization_config.h). Everything else is refused by
// parse_model_config with a message naming the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attention/attention_metadata.h"
#include "core/dtype.h"
#include "model/quantization_config.h"

namespace fg {

enum class Architecture { kLlama, kMistral, kQwen2, kQwen3 };

enum class RopeType { kDefault, kLlama3 };

struct RopeConfig {
  RopeType type = RopeType::kDefault;
  double theta = 10000.0;
  // llama3 scaling (used when type == kLlama3)
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
  // Not from config.json: round the inverse frequencies to bf16 after scaling. transformers
  // does this to a model cast with .to(torch.bfloat16) (inv_freq is a buffer, and casts round
  // it), which is how shared/testdata's references were made; loading with dtype=bfloat16 and
  // vLLM keep them in fp32, which is fullgraph's default.
  bool round_inv_freq_to_bf16 = false;
};

struct ModelConfig {
  Architecture architecture = Architecture::kLlama;
  std::string architecture_name;  // as spelled in config.json, for messages
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  RopeConfig rope;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;  // Qwen2 always; Llama/Mistral/Qwen3 when attention_bias is true
  bool qk_norm = false;   // Qwen3: per-head RMSNorm of q and k before RoPE
  DType dtype = DType::kBF16;  // the checkpoint's declared dtype ("dtype" or "torch_dtype")
  // FP8 checkpoints: the scheme of their quantized linears (nullopt: none is quantized).
  std::optional<QuantizationConfig> quantization;
  std::vector<int64_t> bos_token_ids;
  std::vector<int64_t> eos_token_ids;

  int64_t q_size() const { return num_heads * head_dim; }
  int64_t kv_size() const { return num_kv_heads * head_dim; }
};

// Parses config.json text. `source` names the file in error messages.
ModelConfig parse_model_config(const std::string& json_text, const std::string& source);
ModelConfig load_model_config(const std::string& path);

// What an attention backend must serve for this model: steps of at most max_tokens query tokens
// over max_reqs requests, contexts of at most max_context tokens, KV blocks of block_size.
AttentionLimits attention_limits(const ModelConfig& config, int64_t max_tokens, int64_t max_reqs, int64_t max_context,
                                 int64_t block_size);

}  // namespace fg
