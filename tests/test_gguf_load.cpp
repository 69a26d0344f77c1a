// tests/test_gguf_load.cpp — GGUF checkpoints through the model loader, against the safetensors
// folders they were made from.
//
// tests/fixtures/gguf/models/ holds the shared tiny models written as llama.cpp's converter writes
// them (scripts/gguf/make_gguf_model_fixtures.py): Q/K rows permuted for `llama`, tensors in F32,
// F16, BF16 and Q8_0. Every value of a lossless file is exactly the folder's bf16 value, and the CPU
// backend widens every weight to fp32 before use, so the logits must be equal bit for bit: any
// mistake in the names, the unpermutation or the dequantization shows. The Q8_0 file's weights are
// compared exactly with gguf-py's dequantization in Hugging Face row order.
#include <gtest/gtest.h>

#include <filesystem>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_math.h"
#include "cli_run.h"
#include "gguf_test_support.h"
#include "model/gguf_weights.h"
#include "model/llama_model.h"
#include "model/model_loader.h"
#include "model/model_path.h"
#include "model/safetensors.h"
#include "runner/greedy_generator.h"
#include "test_support.h"

namespace fg {
namespace {

std::string gguf_model(const std::string& name) { return (test::gguf_fixtures() / "models" / name).string(); }

std::vector<float> floats(const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  cpu::load_floats(t, 0, t.numel(), out.data());
  return out;
}

// Every weight the config implies, by Hugging Face name.
std::vector<std::pair<std::string, const Tensor*>> named_weights(const ModelConfig& c, const ModelWeights& w) {
  std::vector<std::pair<std::string, const Tensor*>> out = {{"model.embed_tokens.weight", &w.embed_tokens},
                                                            {"model.norm.weight", &w.final_norm},
                                                            {"lm_head.weight", &w.lm_head}};
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const LayerWeights& L = w.layers[static_cast<size_t>(l)];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    out.insert(out.end(), {{p + "input_layernorm.weight", &L.input_norm},
                           {p + "self_attn.q_proj.weight", &L.q_proj},
                           {p + "self_attn.k_proj.weight", &L.k_proj},
                           {p + "self_attn.v_proj.weight", &L.v_proj},
                           {p + "self_attn.o_proj.weight", &L.o_proj},
                           {p + "post_attention_layernorm.weight", &L.post_attention_norm},
                           {p + "mlp.gate_proj.weight", &L.gate_proj},
                           {p + "mlp.up_proj.weight", &L.up_proj},
                           {p + "mlp.down_proj.weight", &L.down_proj}});
    if (c.qkv_bias)
      out.insert(out.end(), {{p + "self_attn.q_proj.bias", &L.q_bias},
                             {p + "self_attn.k_proj.bias", &L.k_bias},
                             {p + "self_attn.v_proj.bias", &L.v_bias}});
    if (c.qk_norm)
      out.insert(out.end(), {{p + "self_attn.q_norm.weight", &L.q_norm}, {p + "self_attn.k_norm.weight", &L.k_norm}});
  }
  return out;
}

const std::vector<int32_t> kPrompt = {1, 17, 300, 42, 5, 99, 7, 250, 3, 64, 128, 11};

GreedyResult run(const LoadedModel& m, Backend& backend, const std::vector<int32_t>& prompt) {
  LlamaModel model(m.config, m.weights, backend, static_cast<int64_t>(prompt.size()), static_cast<int64_t>(prompt.size()));
  KvCache kv = allocate_kv_cache(backend, m.config, 4, 16, DType::kF32);
  return generate_greedy(model, kv, prompt, 8, /*keep_logits=*/true);
}

class GgufLossless : public ::testing::TestWithParam<std::string> {
 protected:
  CpuBackend backend_{1};
};

TEST_P(GgufLossless, SameConfigWeightsAndLogitsAsTheSafetensorsFolder) {
  const LoadedModel folder = load_model(test::model_fixture(GetParam()), {}, backend_);
  const LoadedModel gguf = load_model(gguf_model(GetParam() + ".gguf"), {}, backend_);
  const ModelConfig& a = folder.config;
  const ModelConfig& b = gguf.config;
  EXPECT_EQ(b.architecture, a.architecture);
  EXPECT_EQ(b.vocab_size, a.vocab_size);
  EXPECT_EQ(b.hidden_size, a.hidden_size);
  EXPECT_EQ(b.intermediate_size, a.intermediate_size);
  EXPECT_EQ(b.num_layers, a.num_layers);
  EXPECT_EQ(b.num_heads, a.num_heads);
  EXPECT_EQ(b.num_kv_heads, a.num_kv_heads);
  EXPECT_EQ(b.head_dim, a.head_dim);
  EXPECT_EQ(b.max_position_embeddings, a.max_position_embeddings);
  EXPECT_EQ(static_cast<float>(b.rms_norm_eps), static_cast<float>(a.rms_norm_eps));  // the file holds a float32
  EXPECT_EQ(b.rope.theta, a.rope.theta);
  EXPECT_EQ(b.rope.type, RopeType::kDefault);
  EXPECT_EQ(b.tie_word_embeddings, a.tie_word_embeddings);
  EXPECT_EQ(b.qkv_bias, a.qkv_bias);
  EXPECT_EQ(b.qk_norm, a.qk_norm);
  EXPECT_EQ(b.bos_token_ids, a.bos_token_ids);
  EXPECT_EQ(b.eos_token_ids, a.eos_token_ids);

  for (const auto& [name, tensor] : named_weights(a, folder.weights)) {
    const auto theirs = named_weights(b, gguf.weights);
    const auto it = std::find_if(theirs.begin(), theirs.end(), [&](const auto& p) { return p.first == name; });
    ASSERT_NE(it, theirs.end()) << name;
    EXPECT_EQ(it->second->dtype, DType::kF32) << name;  // dequantized to the CPU backend's dtype
    EXPECT_EQ(floats(*it->second), floats(*tensor)) << name;
  }
  const GreedyResult want = run(folder, backend_, kPrompt);
  const GreedyResult got = run(gguf, backend_, kPrompt);
  EXPECT_EQ(got.prompt_logits, want.prompt_logits);
  EXPECT_EQ(got.generated_logits, want.generated_logits);
  EXPECT_EQ(got.generated, want.generated);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GgufLossless, ::testing::Values("tiny-llama", "tiny-qwen2", "tiny-qwen3"));

TEST(GgufLoad, Q8_0WeightsAreGgufPysDequantizationInHuggingFaceOrder) {
  CpuBackend backend(1);
  const LoadedModel folder = load_model(test::model_fixture("tiny-llama"), {}, backend);
  const LoadedModel gguf = load_model(gguf_model("tiny-llama-q8_0.gguf"), {}, backend);
  auto reference = SafetensorsFile::open(gguf_model("tiny-llama-q8_0.dequantized.safetensors"));
  int quantized = 0;
  for (const auto& [name, tensor] : named_weights(gguf.config, gguf.weights)) {
    const auto theirs = named_weights(folder.config, folder.weights);
    const auto it = std::find_if(theirs.begin(), theirs.end(), [&](const auto& p) { return p.first == name; });
    ASSERT_NE(it, theirs.end()) << name;
    if (const SafetensorsEntry* q = reference->find(name)) {
      ++quantized;
      EXPECT_EQ(floats(*tensor), test::tensor_values<float>(reference->tensor(*q))) << name;
      EXPECT_NE(floats(*tensor), floats(*it->second)) << name << " should differ from bf16 by Q8_0's rounding";
    } else {
      EXPECT_EQ(floats(*tensor), floats(*it->second)) << name;
    }
  }
  EXPECT_EQ(quantized, 5);
  // Q8_0 keeps ~8 bits per weight: the logits move, a little.
  const GreedyResult want = run(folder, backend, kPrompt);
  const GreedyResult got = run(gguf, backend, kPrompt);
  EXPECT_LE(test::max_abs_diff(got.prompt_logits, want.prompt_logits), 0.05f * test::max_abs(want.prompt_logits));
}

TEST(GgufLoad, NamesFollowLlamaCpp) {
  EXPECT_EQ(gguf_tensor_name("model.embed_tokens.weight"), "token_embd.weight");
  EXPECT_EQ(gguf_tensor_name("lm_head.weight"), "output.weight");
  EXPECT_EQ(gguf_tensor_name("model.norm.weight"), "output_norm.weight");
  EXPECT_EQ(gguf_tensor_name("model.layers.12.self_attn.q_proj.bias"), "blk.12.attn_q.bias");
  EXPECT_EQ(gguf_tensor_name("model.layers.0.self_attn.o_proj.weight"), "blk.0.attn_output.weight");
  EXPECT_EQ(gguf_tensor_name("model.layers.3.self_attn.k_norm.weight"), "blk.3.attn_k_norm.weight");
  EXPECT_EQ(gguf_tensor_name("model.layers.3.post_attention_layernorm.weight"), "blk.3.ffn_norm.weight");
  EXPECT_EQ(gguf_tensor_name("model.layers.3.input_layernorm.weight"), "blk.3.attn_norm.weight");
  EXPECT_EQ(gguf_tensor_name("model.layers.9.mlp.down_proj.weight"), "blk.9.ffn_down.weight");
}

// The converter's permutation, written out row by row: in each head of D rows, file row 2j + i
// holds Hugging Face row i*D/2 + j. Unpermuting must give back the identity.
TEST(GgufLoad, UnpermuteInvertsTheConvertersPermutation) {
  const int64_t heads = 3, d = 8, rows = heads * d;
  std::vector<int32_t> file(static_cast<size_t>(rows));
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < d / 2; ++j)
        file[static_cast<size_t>(h * d + 2 * j + i)] = static_cast<int32_t>(h * d + i * d / 2 + j);
    }
  }
  EXPECT_EQ(file[1], 4);  // head 0: file rows 0, 1 are Hugging Face rows 0 and D/2
  unpermute_rope_rows(std::as_writable_bytes(std::span(file)), heads, sizeof(int32_t));
  for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(file[static_cast<size_t>(r)], r);
}

TEST(GgufLoad, ConfigOfAPathReadsGgufMetadata) {
  EXPECT_TRUE(is_gguf_file(gguf_model("tiny-qwen3.gguf")));
  EXPECT_FALSE(is_gguf_file(test::model_fixture("tiny-qwen3")));
  const ModelConfig c = load_model_path_config(gguf_model("tiny-qwen3.gguf"));
  EXPECT_EQ(c.num_layers, 3);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(load_model_path_config(test::model_fixture("tiny-qwen3")).head_dim, 32);
}

// `fullgraph generate --model FILE.gguf` runs as the folder does, token for token.
TEST(GgufLoad, CliGeneratesFromAGgufFileAsFromTheFolder) {
  const std::string dump = (std::filesystem::temp_directory_path() / "fg_gguf_cli_dump.safetensors").string();
  std::vector<std::vector<int32_t>> ids;
  for (const std::string& model : {test::model_fixture("tiny-llama"), gguf_model("tiny-llama.gguf")}) {
    const test::CliRun r =
        test::run_fullgraph("generate --model " + model + " --prompt-ids 1,17,300,42,5 --max-tokens 8 --dump-logits " + dump);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto out = SafetensorsFile::open(dump);
    ids.push_back(test::tensor_values<int32_t>(out->tensor(*out->find("generated_ids"))));
    if (model.ends_with(".gguf")) {
      EXPECT_NE(r.output.find("dequantized"), std::string::npos) << r.output;
    }
  }
  EXPECT_EQ(ids[0], ids[1]);
  EXPECT_EQ(ids[0].size(), 8u);
  std::filesystem::remove(dump);
}

TEST(GgufLoad, TextPromptWithoutATokenizerTakesTheUsualError) {
  const test::CliRun r = test::run_fullgraph("generate --model " + gguf_model("tiny-llama.gguf") + " --prompt Hello");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("need a tokenizer"), std::string::npos) << r.output;
}

TEST(GgufLoad, MissingGgufFileIsNamedAsAFile) {
  const test::CliRun r = test::run_fullgraph("generate --model /nonexistent/model.gguf --prompt-ids 1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("the model file /nonexistent/model.gguf does not exist"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace fg
