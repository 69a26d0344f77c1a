// tests/test_config.cpp — config.json parsing: the fixture checkpoints, real Hub configs written
// inline, and one test per refusal, each asserting that the message names the file and field.
//
// The Hub configs are the ones the engine will meet first; they are copied as published
// (Llama-2-7B without num_key_value_heads, as early uploads were) because their quirks — rope
// settings in the older spelling, sliding_window set but off in Qwen2.5, integer rope_theta in
// Qwen3, eos lists — are what the parser has to get right.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "model/config.h"

namespace fg {
namespace {

using json = nlohmann::json;

// ---- Hub configs, as published -------------------------------------------------------------

constexpr const char* kLlama31_8B_Instruct = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009],
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.43.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
})";

constexpr const char* kLlama2_7B = R"({
  "architectures": ["LlamaForCausalLM"],
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 11008,
  "max_position_embeddings": 4096,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "pad_token_id": 0,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "tie_word_embeddings": false,
  "torch_dtype": "float16",
  "transformers_version": "4.31.0.dev0",
  "use_cache": true,
  "vocab_size": 32000
})";

constexpr const char* kMistral7B_v03 = R"({
  "architectures": ["MistralForCausalLM"],
  "attention_dropout": 0.0,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 32768,
  "model_type": "mistral",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05,
  "rope_theta": 1000000.0,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.42.0.dev0",
  "use_cache": true,
  "vocab_size": 32768
})";

constexpr const char* kMistral7B_v01 = R"({
  "architectures": ["MistralForCausalLM"],
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 32768,
  "model_type": "mistral",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05,
  "rope_theta": 10000.0,
  "sliding_window": 4096,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.34.0.dev0",
  "use_cache": true,
  "vocab_size": 32000
})";

constexpr const char* kQwen25_05B = R"({
  "architectures": ["Qwen2ForCausalLM"],
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151643,
  "hidden_act": "silu",
  "hidden_size": 896,
  "initializer_range": 0.02,
  "intermediate_size": 4864,
  "max_position_embeddings": 32768,
  "max_window_layers": 24,
  "model_type": "qwen2",
  "num_attention_heads": 14,
  "num_hidden_layers": 24,
  "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0,
  "sliding_window": 32768,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.40.1",
  "use_cache": true,
  "use_mrope": false,
  "use_sliding_window": false,
  "vocab_size": 151936
})";

constexpr const char* kQwen3_06B = R"({
  "architectures": ["Qwen3ForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 1024,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "max_position_embeddings": 40960,
  "max_window_layers": 28,
  "model_type": "qwen3",
  "num_attention_heads": 16,
  "num_hidden_layers": 28,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": null,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
})";

// ---- helpers -------------------------------------------------------------------------------

std::string fixture(const std::string& folder) {
  return std::string(FULLGRAPH_TESTDATA) + "/" + folder + "/config.json";
}

ModelConfig parse(const std::string& text) { return parse_model_config(text, "config.json"); }

// `base` with `edit` applied, as JSON text.
std::string edited(const char* base, const std::function<void(json&)>& edit) {
  json config = json::parse(base);
  edit(config);
  return config.dump(2);
}

// The message parse_model_config raises for `text`; every message must lead with the source.
std::string refusal(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& error) {
    std::string message = error.what();
    EXPECT_EQ(message.rfind("config.json: ", 0), 0u) << message;
    return message;
  }
  ADD_FAILURE() << "expected a refusal of:\n" << text;
  return "";
}

#define EXPECT_MENTIONS(message, part) \
  EXPECT_NE((message).find(part), std::string::npos) << (message)

// ---- the fixture checkpoints (written by transformers 5: rope_parameters spelling) ----------

TEST(ConfigFixtures, TinyLlama) {
  ModelConfig c = load_model_config(fixture("models/tiny-llama"));
  EXPECT_EQ(c.architecture, Architecture::kLlama);
  EXPECT_EQ(c.architecture_name, "LlamaForCausalLM");
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 160);
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.max_position_embeddings, 4096);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_EQ(c.rope.type, RopeType::kDefault);
  EXPECT_DOUBLE_EQ(c.rope.theta, 10000.0);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.dtype, DType::kBF16);
  EXPECT_EQ(c.bos_token_ids, std::vector<int64_t>{1});
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{2});
}

TEST(ConfigFixtures, TinyLlama3Rope) {
  ModelConfig c = load_model_config(fixture("models/tiny-llama3-rope"));
  EXPECT_EQ(c.architecture, Architecture::kLlama);
  EXPECT_EQ(c.hidden_size, 96);
  EXPECT_EQ(c.num_heads, 6);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 16);  // given explicitly (it happens to equal 96 / 6)
  EXPECT_EQ(c.q_size(), 96);
  EXPECT_EQ(c.kv_size(), 32);
  EXPECT_EQ(c.vocab_size, 384);
  EXPECT_EQ(c.rope.type, RopeType::kLlama3);
  EXPECT_DOUBLE_EQ(c.rope.theta, 500000.0);
  EXPECT_DOUBLE_EQ(c.rope.factor, 8.0);
  EXPECT_DOUBLE_EQ(c.rope.low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(c.rope.high_freq_factor, 4.0);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 64);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.qkv_bias);
}

TEST(ConfigFixtures, TinyQwen2) {
  ModelConfig c = load_model_config(fixture("models/tiny-qwen2"));
  EXPECT_EQ(c.architecture, Architecture::kQwen2);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 128);
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.num_kv_heads, 1);
  EXPECT_EQ(c.head_dim, 16);  // absent: hidden_size / heads
  EXPECT_EQ(c.vocab_size, 448);
  EXPECT_DOUBLE_EQ(c.rope.theta, 1000000.0);
  EXPECT_EQ(c.rope.type, RopeType::kDefault);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_TRUE(c.bos_token_ids.empty());  // null
  EXPECT_TRUE(c.eos_token_ids.empty());
}

TEST(ConfigFixtures, TinyQwen3) {
  ModelConfig c = load_model_config(fixture("models/tiny-qwen3"));
  EXPECT_EQ(c.architecture, Architecture::kQwen3);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 192);
  EXPECT_EQ(c.num_layers, 3);
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 32);  // ≠ 64 / 4
  EXPECT_EQ(c.q_size(), 128);
  EXPECT_EQ(c.vocab_size, 320);
  EXPECT_DOUBLE_EQ(c.rope.theta, 1000000.0);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_FALSE(c.tie_word_embeddings);
}

TEST(ConfigFixtures, E2eTinyLlama2Tok) {
  ModelConfig c = load_model_config(fixture("e2e/tiny-llama2tok"));
  EXPECT_EQ(c.architecture, Architecture::kLlama);
  EXPECT_EQ(c.vocab_size, 32000);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 128);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.max_position_embeddings, 2048);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.bos_token_ids, std::vector<int64_t>{1});
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{2});
}

TEST(ConfigFixtures, E2eTinyQwen3Tok) {
  // A Llama-architecture model that uses the Qwen3 tokenizer, hence the 151669 vocabulary.
  ModelConfig c = load_model_config(fixture("e2e/tiny-qwen3tok"));
  EXPECT_EQ(c.architecture, Architecture::kLlama);
  EXPECT_EQ(c.vocab_size, 151669);
  EXPECT_EQ(c.hidden_size, 32);
  EXPECT_EQ(c.num_heads, 2);
  EXPECT_EQ(c.num_kv_heads, 1);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.qk_norm);
}

// ---- Hub configs --------------------------------------------------------------------------

TEST(ConfigHub, Llama31_8B) {
  ModelConfig c = parse(kLlama31_8B_Instruct);
  EXPECT_EQ(c.architecture, Architecture::kLlama);
  EXPECT_EQ(c.num_heads, 32);
  EXPECT_EQ(c.num_kv_heads, 8);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.vocab_size, 128256);
  EXPECT_EQ(c.max_position_embeddings, 131072);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.rope.type, RopeType::kLlama3);
  EXPECT_DOUBLE_EQ(c.rope.theta, 500000.0);
  EXPECT_DOUBLE_EQ(c.rope.factor, 8.0);
  EXPECT_DOUBLE_EQ(c.rope.low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(c.rope.high_freq_factor, 4.0);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 8192);
  EXPECT_EQ(c.bos_token_ids, std::vector<int64_t>{128000});
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_EQ(c.dtype, DType::kBF16);
  EXPECT_FALSE(c.tie_word_embeddings);
}

TEST(ConfigHub, Llama2_7BDefaultsKvHeadsAndHeadDim) {
  ModelConfig c = parse(kLlama2_7B);
  EXPECT_EQ(c.num_heads, 32);
  EXPECT_EQ(c.num_kv_heads, 32);  // absent: multi-head attention
  EXPECT_EQ(c.head_dim, 128);     // absent: 4096 / 32
  EXPECT_EQ(c.intermediate_size, 11008);
  EXPECT_EQ(c.rope.type, RopeType::kDefault);
  EXPECT_DOUBLE_EQ(c.rope.theta, 10000.0);  // absent: HF's default
  EXPECT_EQ(c.dtype, DType::kF16);
}

TEST(ConfigHub, Mistral7B_v03) {
  ModelConfig c = parse(kMistral7B_v03);
  EXPECT_EQ(c.architecture, Architecture::kMistral);
  EXPECT_EQ(c.architecture_name, "MistralForCausalLM");
  EXPECT_EQ(c.num_kv_heads, 8);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.vocab_size, 32768);
  EXPECT_DOUBLE_EQ(c.rope.theta, 1000000.0);
  EXPECT_FALSE(c.qkv_bias);
}

TEST(ConfigHub, Qwen25_05BSlidingWindowSetButOff) {
  ModelConfig c = parse(kQwen25_05B);
  EXPECT_EQ(c.architecture, Architecture::kQwen2);
  EXPECT_EQ(c.num_heads, 14);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{151643});
}

TEST(ConfigHub, Qwen3_06B) {
  ModelConfig c = parse(kQwen3_06B);
  EXPECT_EQ(c.architecture, Architecture::kQwen3);
  EXPECT_EQ(c.hidden_size, 1024);
  EXPECT_EQ(c.head_dim, 128);  // 16 × 128 = 2048 ≠ hidden_size
  EXPECT_EQ(c.q_size(), 2048);
  EXPECT_EQ(c.kv_size(), 1024);
  EXPECT_DOUBLE_EQ(c.rope.theta, 1000000.0);  // written as an integer
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_TRUE(c.tie_word_embeddings);
}

// ---- accepted variations ------------------------------------------------------------------

TEST(ConfigParse, BothRopeSpellingsThatAgree) {
  ModelConfig c = parse(edited(kLlama31_8B_Instruct, [](json& j) {
    j["rope_parameters"] = j["rope_scaling"];
    j["rope_parameters"]["rope_theta"] = 500000;
  }));
  EXPECT_EQ(c.rope.type, RopeType::kLlama3);
  EXPECT_DOUBLE_EQ(c.rope.theta, 500000.0);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 8192);
}

TEST(ConfigParse, LegacyRopeScalingTypeKey) {
  ModelConfig c = parse(edited(kLlama31_8B_Instruct, [](json& j) {
    j["rope_scaling"].erase("rope_type");
    j["rope_scaling"]["type"] = "llama3";
  }));
  EXPECT_EQ(c.rope.type, RopeType::kLlama3);
}

TEST(ConfigParse, NullHeadDimAndKvHeadsTakeDefaults) {
  ModelConfig c = parse(edited(kMistral7B_v03, [](json& j) {
    j["head_dim"] = nullptr;
    j["num_key_value_heads"] = nullptr;
  }));
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.num_kv_heads, 32);
}

TEST(ConfigParse, Qwen3HeadDimDefaultsTo128LikeTransformers) {
  // Qwen3Config declares head_dim=128 rather than deriving it; 1024 / 16 would be 64.
  ModelConfig c = parse(edited(kQwen3_06B, [](json& j) { j.erase("head_dim"); }));
  EXPECT_EQ(c.head_dim, 128);
}

TEST(ConfigParse, AttentionBiasAndDtypePrecedence) {
  ModelConfig c = parse(edited(kLlama2_7B, [](json& j) {
    j["attention_bias"] = true;
    j["dtype"] = "float32";  // the transformers-5 key wins over torch_dtype
    j["eos_token_id"] = nullptr;
  }));
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_EQ(c.dtype, DType::kF32);
  EXPECT_TRUE(c.eos_token_ids.empty());
  ModelConfig bare = parse(edited(kLlama2_7B, [](json& j) {
    j.erase("torch_dtype");
    j.erase("hidden_act");
    j.erase("rms_norm_eps");
  }));
  EXPECT_EQ(bare.dtype, DType::kBF16);
  EXPECT_DOUBLE_EQ(bare.rms_norm_eps, 1e-6);
}

TEST(ConfigParse, IgnoresPretrainingTpAndFullLayerTypes) {
  ModelConfig c = parse(edited(kLlama2_7B, [](json& j) {
    j["pretraining_tp"] = 2;
    j["layer_types"] = json::array();
    for (int i = 0; i < 32; ++i) j["layer_types"].push_back("full_attention");
    j["partial_rotary_factor"] = 1.0;
    j["quantization_config"] = nullptr;
  }));
  EXPECT_EQ(c.num_layers, 32);
}

// ---- refusals -----------------------------------------------------------------------------

TEST(ConfigRefusal, UnknownArchitecture) {
  for (const char* name : {"Qwen3MoeForCausalLM", "MixtralForCausalLM", "GemmaForCausalLM"}) {
    std::string m =
        refusal(edited(kQwen3_06B, [&](json& j) { j["architectures"] = json::array({name}); }));
    EXPECT_MENTIONS(m, "architectures");
    EXPECT_MENTIONS(m, name);
    EXPECT_MENTIONS(m, "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM");
  }
  std::string missing = refusal(edited(kQwen3_06B, [](json& j) { j.erase("architectures"); }));
  EXPECT_MENTIONS(missing, "architectures is missing");
  EXPECT_MENTIONS(missing, "Qwen3ForCausalLM");
  std::string two = refusal(edited(kQwen3_06B, [](json& j) {
    j["architectures"] = json::array({"Qwen3ForCausalLM", "LlamaForCausalLM"});
  }));
  EXPECT_MENTIONS(two, "exactly one");
}

TEST(ConfigRefusal, MixtureOfExperts) {
  std::string mixtral =
      refusal(edited(kMistral7B_v03, [](json& j) { j["num_local_experts"] = 8; }));
  EXPECT_MENTIONS(mixtral, "num_local_experts 8");
  EXPECT_MENTIONS(mixtral, "mixture-of-experts");
  std::string qwen = refusal(edited(kQwen3_06B, [](json& j) { j["num_experts"] = 128; }));
  EXPECT_MENTIONS(qwen, "num_experts 128");
  std::string deepseek = refusal(edited(kLlama2_7B, [](json& j) { j["n_routed_experts"] = 64; }));
  EXPECT_MENTIONS(deepseek, "n_routed_experts");
  std::string other = refusal(edited(kLlama2_7B, [](json& j) { j["moe_num_shared_experts"] = 2; }));
  EXPECT_MENTIONS(other, "moe_num_shared_experts");
  // A zero count is a dense model.
  EXPECT_NO_THROW(parse(edited(kQwen3_06B, [](json& j) { j["num_experts"] = 0; })));
}

TEST(ConfigRefusal, MistralSlidingWindow) {
  std::string m = refusal(kMistral7B_v01);
  EXPECT_MENTIONS(m, "sliding_window 4096");
  EXPECT_MENTIONS(m, "not supported");
}

TEST(ConfigRefusal, QwenUseSlidingWindow) {
  std::string qwen2 = refusal(edited(kQwen25_05B, [](json& j) { j["use_sliding_window"] = true; }));
  EXPECT_MENTIONS(qwen2, "use_sliding_window true");
  std::string qwen3 = refusal(edited(kQwen3_06B, [](json& j) { j["use_sliding_window"] = true; }));
  EXPECT_MENTIONS(qwen3, "use_sliding_window true");
}

TEST(ConfigRefusal, SlidingLayerType) {
  std::string m = refusal(edited(kQwen3_06B, [](json& j) {
    j["layer_types"] = json::array();
    for (int i = 0; i < 28; ++i)
      j["layer_types"].push_back(i == 27 ? "sliding_attention" : "full_attention");
  }));
  EXPECT_MENTIONS(m, "layer_types[27] 'sliding_attention'");
  std::string short_list = refusal(
      edited(kQwen3_06B, [](json& j) { j["layer_types"] = json::array({"full_attention"}); }));
  EXPECT_MENTIONS(short_list, "layer_types has 1 entries but num_hidden_layers is 28");
}

TEST(ConfigRefusal, YarnRope) {
  std::string m = refusal(edited(kQwen3_06B, [](json& j) {
    j["rope_scaling"] = {
        {"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
  }));
  EXPECT_EQ(
      m,
      "config.json: rope_scaling.rope_type 'yarn' is not supported (supported: default, llama3)");
  std::string v5 = refusal(edited(kQwen3_06B, [](json& j) {
    j["rope_parameters"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"rope_theta", 1000000}};
  }));
  EXPECT_MENTIONS(v5, "rope_parameters.rope_type 'yarn'");
}

TEST(ConfigRefusal, LegacyLinearRopeScaling) {
  std::string m = refusal(edited(kLlama2_7B, [](json& j) {
    j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  }));
  EXPECT_EQ(
      m, "config.json: rope_scaling.type 'linear' is not supported (supported: default, llama3)");
  std::string dynamic = refusal(edited(kLlama2_7B, [](json& j) {
    j["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
  }));
  EXPECT_MENTIONS(dynamic, "rope_scaling.type 'dynamic'");
}

TEST(ConfigRefusal, IncompleteLlama3Rope) {
  std::string missing =
      refusal(edited(kLlama31_8B_Instruct, [](json& j) { j["rope_scaling"].erase("factor"); }));
  EXPECT_MENTIONS(missing, "rope_scaling.factor is required for llama3");
  std::string inverted = refusal(
      edited(kLlama31_8B_Instruct, [](json& j) { j["rope_scaling"]["high_freq_factor"] = 1.0; }));
  EXPECT_MENTIONS(
      inverted,
      "rope_scaling.high_freq_factor 1 must be greater than rope_scaling.low_freq_factor 1");
}

TEST(ConfigRefusal, PartialRotaryFactor) {
  std::string m = refusal(edited(kLlama2_7B, [](json& j) { j["partial_rotary_factor"] = 0.5; }));
  EXPECT_MENTIONS(m, "partial_rotary_factor 0.5");
}

TEST(ConfigRefusal, QuantizationConfig) {
  std::string m = refusal(edited(kLlama31_8B_Instruct, [](json& j) {
    j["quantization_config"] = {{"quant_method", "awq"}, {"bits", 4}};
  }));
  EXPECT_MENTIONS(m, "quantization_config");
  EXPECT_MENTIONS(m, "awq");
}

TEST(ConfigRefusal, GeluActivation) {
  std::string m = refusal(edited(kLlama2_7B, [](json& j) { j["hidden_act"] = "gelu"; }));
  EXPECT_EQ(m, "config.json: hidden_act 'gelu' is not supported (supported: silu)");
}

TEST(ConfigRefusal, MlpBias) {
  std::string m = refusal(edited(kLlama31_8B_Instruct, [](json& j) { j["mlp_bias"] = true; }));
  EXPECT_MENTIONS(m, "mlp_bias true");
}

TEST(ConfigRefusal, WrongTypes) {
  struct Case {
    json value;
    const char* found;
  };
  for (const Case& c :
       {Case{"64", "found string \"64\""}, Case{64.5, "found 64.5"}, Case{-3, "found -3"},
        Case{true, "found boolean true"}, Case{0, "found 0"}, Case{64.0, "found 64.0"}}) {
    std::string m = refusal(edited(kLlama2_7B, [&](json& j) { j["hidden_size"] = c.value; }));
    EXPECT_MENTIONS(m, "hidden_size must be a positive integer");
    EXPECT_MENTIONS(m, c.found);
  }
  std::string eps = refusal(edited(kLlama2_7B, [](json& j) { j["rms_norm_eps"] = "1e-5"; }));
  EXPECT_MENTIONS(eps, "rms_norm_eps must be a number, found string \"1e-5\"");
  std::string tie = refusal(edited(kLlama2_7B, [](json& j) { j["tie_word_embeddings"] = 1; }));
  EXPECT_MENTIONS(tie, "tie_word_embeddings must be true or false, found 1");
  std::string eos = refusal(edited(kLlama31_8B_Instruct, [](json& j) {
    j["eos_token_id"] = json::array({128001, "x"});
  }));
  EXPECT_MENTIONS(eos, "eos_token_id[1]");
  std::string theta = refusal(edited(kLlama2_7B, [](json& j) { j["rope_theta"] = -1; }));
  EXPECT_MENTIONS(theta, "rope_theta must be positive, found -1");
  std::string dtype = refusal(edited(kLlama2_7B, [](json& j) { j["torch_dtype"] = "float64"; }));
  EXPECT_MENTIONS(dtype, "torch_dtype 'float64' is not supported");
  std::string huge =
      refusal(edited(kLlama2_7B, [](json& j) { j["vocab_size"] = 18446744073709551615ull; }));
  EXPECT_MENTIONS(huge, "vocab_size must be a positive integer");
}

TEST(ConfigRefusal, NonDivisibleGqa) {
  std::string m =
      refusal(edited(kLlama31_8B_Instruct, [](json& j) { j["num_key_value_heads"] = 5; }));
  EXPECT_MENTIONS(m, "num_key_value_heads 5 must divide num_attention_heads 32");
}

TEST(ConfigRefusal, OddHeadDim) {
  std::string m = refusal(edited(kQwen3_06B, [](json& j) { j["head_dim"] = 15; }));
  EXPECT_MENTIONS(m, "head_dim 15 must be even");
  std::string indivisible =
      refusal(edited(kLlama2_7B, [](json& j) { j["num_attention_heads"] = 3; }));
  EXPECT_MENTIONS(indivisible, "hidden_size 4096 is not divisible by num_attention_heads 3");
}

TEST(ConfigRefusal, MalformedJson) {
  std::string m = refusal("{\n  \"hidden_size\": 64,\n  \"vocab_size\": }\n");
  EXPECT_MENTIONS(m, "malformed JSON");
  EXPECT_MENTIONS(m, "line 3");
  std::string array = refusal("[1, 2]");
  EXPECT_MENTIONS(array, "top level must be a JSON object");
}

TEST(ConfigRefusal, MissingRequiredField) {
  std::string m = refusal(edited(kQwen25_05B, [](json& j) { j.erase("vocab_size"); }));
  EXPECT_MENTIONS(m, "vocab_size is required");
  std::string null_layers =
      refusal(edited(kQwen25_05B, [](json& j) { j["num_hidden_layers"] = nullptr; }));
  EXPECT_MENTIONS(null_layers, "num_hidden_layers is required");
}

TEST(ConfigRefusal, RopeSpellingsDisagree) {
  std::string theta = refusal(edited(kLlama2_7B, [](json& j) {
    j["rope_theta"] = 10000.0;
    j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 500000.0}};
  }));
  EXPECT_EQ(theta,
            "config.json: rope_parameters.rope_theta 500000 disagrees with rope_theta 10000");
  std::string type = refusal(edited(kLlama31_8B_Instruct, [](json& j) {
    j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 500000.0}};
  }));
  EXPECT_MENTIONS(
      type, "rope_parameters.rope_type 'default' disagrees with rope_scaling.rope_type 'llama3'");
  std::string factor = refusal(edited(kLlama31_8B_Instruct, [](json& j) {
    j["rope_parameters"] = j["rope_scaling"];
    j["rope_parameters"]["factor"] = 32.0;
  }));
  EXPECT_MENTIONS(factor, "rope_parameters.factor 32 disagrees with rope_scaling.factor 8");
}

// ---- the file ------------------------------------------------------------------------------

TEST(ConfigLoad, MissingFileNamesThePath) {
  const std::string path = "/nonexistent/fullgraph/config.json";
  try {
    load_model_config(path);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()).rfind(path + ": ", 0), 0u) << error.what();
  }
}

TEST(ConfigLoad, ErrorsInAFileNameThatFile) {
  const std::string path = ::testing::TempDir() + "fullgraph_test_config_bad.json";
  {
    std::ofstream out(path);
    out << edited(kLlama2_7B, [](json& j) { j["hidden_act"] = "relu"; });
  }
  try {
    load_model_config(path);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              path + ": hidden_act 'relu' is not supported (supported: silu)");
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace fg
