// model/named_shapes.cpp — the configs, as their Hugging Face config.json files state them.
#include "model/named_shapes.h"

#include <fmt/format.h>

#include <map>

#include "core/error.h"

namespace fg {

namespace {

// The Llama 3.x configs differ in their sizes, the llama3 RoPE scaling factor and whether the LM
// head is tied; the rest is the family's.
std::string llama3(int hidden, int intermediate, int layers, int heads, int kv_heads, int head_dim,
                   double rope_factor, bool tied) {
  return fmt::format(
      R"({{"architectures": ["LlamaForCausalLM"], "hidden_size": {}, "intermediate_size": {},
        "num_hidden_layers": {}, "num_attention_heads": {}, "num_key_value_heads": {}, "head_dim": {},
        "vocab_size": 128256, "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
        "rope_scaling": {{"factor": {}, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"}},
        "tie_word_embeddings": {}, "torch_dtype": "bfloat16", "bos_token_id": 128000,
        "eos_token_id": [128001, 128008, 128009]}})",
      hidden, intermediate, layers, heads, kv_heads, head_dim, rope_factor, tied);
}

const std::map<std::string, std::string>& shapes() {
  static const std::map<std::string, std::string> table = {
      {"llama-3.2-1b", llama3(2048, 8192, 16, 32, 8, 64, 32.0, true)},
      {"llama-3.1-8b", llama3(4096, 14336, 32, 32, 8, 128, 8.0, false)},
      // 141 GB of bf16 weights: one GPU runs it with --quantization fp8 (70 GB).
      {"llama-3.1-70b", llama3(8192, 28672, 80, 64, 8, 128, 8.0, false)},
      {"qwen2.5-0.5b", R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 896, "intermediate_size": 4864,
        "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
        "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "sliding_window": 32768,
        "use_sliding_window": false, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
        "bos_token_id": 151643, "eos_token_id": 151643})"},
      {"qwen3-0.6b", R"({"architectures": ["Qwen3ForCausalLM"], "hidden_size": 1024, "intermediate_size": 3072,
        "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 151936, "max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
        "tie_word_embeddings": true, "torch_dtype": "bfloat16", "bos_token_id": 151643,
        "eos_token_id": 151645})"},
  };
  return table;
}

}  // namespace

std::vector<std::string> named_model_shapes() {
  std::vector<std::string> names;
  for (const auto& [name, _] : shapes()) names.push_back(name);
  return names;
}

ModelConfig named_model_config(const std::string& name) {
  auto it = shapes().find(name);
  FG_CHECK(it != shapes().end(), "unknown model shape '{}' (known: {})", name, fmt::join(named_model_shapes(), ", "));
  return parse_model_config(it->second, "named shape " + name);
}

}  // namespace fg
