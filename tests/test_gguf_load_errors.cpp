// tests/test_gguf_load_errors.cpp — GGUF checkpoints the loader must refuse, each with a message
// that names what is wrong: an unknown architecture, a missing, misshapen or unexpected tensor,
// a ggml type the dequantizer lacks, features fullgraph does not implement.
//
// The files are built by hand (gguf_test_support.h) from one valid one-layer llama, changed in a
// single place per test; the valid one must load, so each refusal is the change's doing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <functional>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "gguf_test_support.h"
#include "model/model_loader.h"
#include "model/model_path.h"

namespace fg {
namespace {

using ::testing::HasSubstr;

// 256 wide so that every row may also be a Q2_K row (256-element blocks).
constexpr uint64_t kHidden = 256, kFfn = 256, kVocab = 8, kHeads = 2, kKvHeads = 1, kHeadDim = 128;

struct TinyTensor {
  std::string name;
  std::vector<uint64_t> ne;  // GGUF order: row length first
  GgmlType type = GgmlType::kF32;
};

struct TinyModel {
  std::string arch = "llama";
  std::vector<TinyTensor> tensors;
  std::vector<std::string> extra_kvs;  // encoded
  std::string skip_key;                // a hyperparameter left out

  TinyModel() {
    tensors = {{"token_embd.weight", {kHidden, kVocab}},
               {"output_norm.weight", {kHidden}},
               {"blk.0.attn_norm.weight", {kHidden}},
               {"blk.0.attn_q.weight", {kHidden, kHeads * kHeadDim}},
               {"blk.0.attn_k.weight", {kHidden, kKvHeads * kHeadDim}},
               {"blk.0.attn_v.weight", {kHidden, kKvHeads * kHeadDim}},
               {"blk.0.attn_output.weight", {kHeads * kHeadDim, kHidden}},
               {"blk.0.ffn_norm.weight", {kHidden}},
               {"blk.0.ffn_gate.weight", {kHidden, kFfn}},
               {"blk.0.ffn_up.weight", {kHidden, kFfn}},
               {"blk.0.ffn_down.weight", {kFfn, kHidden}}};
  }
  TinyTensor& tensor(const std::string& name) {
    for (TinyTensor& t : tensors)
      if (t.name == name) return t;
    throw std::runtime_error("no tensor " + name);
  }
  void remove(const std::string& name) {
    std::erase_if(tensors, [&](const TinyTensor& t) { return t.name == name; });
  }

  std::string bytes() const {
    using test::kv_string;
    using test::kv_u32;
    test::GgufImage image;
    const auto key = [&](const char* suffix) { return arch + "." + suffix; };
    image.kv(kv_string("general.architecture", arch));
    const std::pair<std::string, uint64_t> sizes[] = {
        {key("block_count"), 1},          {key("context_length"), 64},
        {key("embedding_length"), kHidden}, {key("feed_forward_length"), kFfn},
        {key("attention.head_count"), kHeads}, {key("attention.head_count_kv"), kKvHeads}};
    for (const auto& [name, value] : sizes)
      if (name != skip_key) image.kv(kv_u32(name, static_cast<uint32_t>(value)));
    image.kv(test::gguf_kv(key("attention.layer_norm_rms_epsilon"), GgufValueType::kF32,
                           test::le32(std::bit_cast<uint32_t>(1e-5f))));
    for (const std::string& kv : extra_kvs) image.kv(kv);
    for (const TinyTensor& t : tensors) {
      uint64_t numel = 1;
      for (uint64_t d : t.ne) numel *= d;
      const uint64_t size = *ggml_bytes(t.type, numel);
      image.tensor(test::tensor_info(t.name, t.ne, static_cast<uint32_t>(t.type), image.data.size()));
      std::string data(size, '\0');
      if (t.type == GgmlType::kF32) {  // norms at 1, the rest 0: finite values
        for (uint64_t i = 0; i < numel && t.name.ends_with("norm.weight"); ++i)
          data.replace(i * 4, 4, test::le32(std::bit_cast<uint32_t>(1.0f)));
      }
      image.data += data;
      image.data.append((32 - image.data.size() % 32) % 32, '\0');
    }
    return image.bytes();
  }
};

class GgufLoadErrors : public ::testing::Test {
 protected:
  std::string load_error(const TinyModel& model) {
    const std::string path = dir_ / "model.gguf";
    test::write_file_bytes(path, model.bytes());
    try {
      load_model(path, {}, backend_);
    } catch (const Error& e) {
      return e.what();
    }
    return "(loaded without error)";
  }

  test::TempDirPath dir_{"fg_gguf_load"};
  CpuBackend backend_{1};
};

TEST_F(GgufLoadErrors, TheUnchangedModelLoads) {
  TinyModel model;
  EXPECT_EQ(load_error(model), "(loaded without error)");
  const LoadedModel loaded = load_model(dir_ / "model.gguf", {}, backend_);
  EXPECT_EQ(loaded.config.head_dim, 128);
  EXPECT_EQ(loaded.config.vocab_size, 8);
  EXPECT_TRUE(loaded.config.tie_word_embeddings);  // no output.weight
  EXPECT_EQ(loaded.weights.lm_head.data, loaded.weights.embed_tokens.data);
}

TEST_F(GgufLoadErrors, UnknownArchitectureIsNamed) {
  TinyModel model;
  model.arch = "gpt2";
  const std::string error = load_error(model);
  EXPECT_THAT(error, HasSubstr("general.architecture 'gpt2' is not supported"));
  EXPECT_THAT(error, HasSubstr("llama, qwen2, qwen3"));
}

TEST_F(GgufLoadErrors, MissingTensorIsNamed) {
  TinyModel model;
  model.remove("blk.0.ffn_up.weight");
  const std::string error = load_error(model);
  EXPECT_THAT(error, HasSubstr("missing tensor 'blk.0.ffn_up.weight'"));
  EXPECT_THAT(error, HasSubstr("model.layers.0.mlp.up_proj.weight"));
}

TEST_F(GgufLoadErrors, WrongShapeIsNamed) {
  TinyModel model;
  model.tensor("blk.0.attn_k.weight").ne = {kHidden, kHidden};
  const std::string error = load_error(model);
  EXPECT_THAT(error, HasSubstr("tensor 'blk.0.attn_k.weight'"));
  EXPECT_THAT(error, HasSubstr("[256, 256]"));
  EXPECT_THAT(error, HasSubstr("implies [128, 256]"));
}

TEST_F(GgufLoadErrors, UnsupportedTypeIsNamed) {
  TinyModel model;
  model.tensor("blk.0.ffn_down.weight").type = GgmlType::kQ2_K;
  const std::string error = load_error(model);
  EXPECT_THAT(error, HasSubstr("tensor 'blk.0.ffn_down.weight'"));
  EXPECT_THAT(error, HasSubstr("Q2_K"));
}

TEST_F(GgufLoadErrors, UnexpectedTensorIsNamed) {
  TinyModel model;
  model.tensors.push_back({"blk.0.ffn_gate_exps.weight", {kHidden, kFfn}});
  EXPECT_THAT(load_error(model), HasSubstr("unexpected tensor 'blk.0.ffn_gate_exps.weight'"));
}

TEST_F(GgufLoadErrors, MissingHyperparameterIsNamed) {
  TinyModel model;
  model.skip_key = "llama.feed_forward_length";
  EXPECT_THAT(load_error(model), HasSubstr("the GGUF metadata has no llama.feed_forward_length"));
}

TEST_F(GgufLoadErrors, Qwen2WithoutBiasesIsRefused) {
  TinyModel model;
  model.arch = "qwen2";  // qwen2's attention always has q/k/v biases
  EXPECT_THAT(load_error(model), HasSubstr("missing tensor 'blk.0.attn_q.bias'"));
}

TEST_F(GgufLoadErrors, Qwen3WithoutQkNormsIsRefused) {
  TinyModel model;
  model.arch = "qwen3";
  EXPECT_THAT(load_error(model), HasSubstr("attn_q_norm"));
}

TEST_F(GgufLoadErrors, MixtureOfExpertsIsRefused) {
  TinyModel model;
  model.extra_kvs.push_back(test::kv_u32("llama.expert_count", 8));
  EXPECT_THAT(load_error(model), HasSubstr("llama.expert_count is 8"));
}

TEST_F(GgufLoadErrors, RopeScalingIsRefused) {
  TinyModel model;
  model.extra_kvs.push_back(test::kv_string("llama.rope.scaling.type", "yarn"));
  EXPECT_THAT(load_error(model), HasSubstr("llama.rope.scaling.type is 'yarn'"));
  TinyModel freqs;
  freqs.tensors.push_back({"rope_freqs.weight", {kHeadDim / 2}});
  EXPECT_THAT(load_error(freqs), HasSubstr("rope_freqs.weight"));
}

TEST_F(GgufLoadErrors, PartialRotaryIsRefused) {
  TinyModel model;
  model.extra_kvs.push_back(test::kv_u32("llama.rope.dimension_count", 64));
  EXPECT_THAT(load_error(model), HasSubstr("llama.rope.dimension_count is 64"));
}

TEST_F(GgufLoadErrors, ModelPathAcceptsAGgufFileAndNamesAMissingOne) {
  TinyModel model;
  const std::string path = dir_ / "model.gguf";
  test::write_file_bytes(path, model.bytes());
  EXPECT_NO_THROW(check_model_folder(path));
  EXPECT_EQ(resolve_model_path(path), path);
  try {
    resolve_model_path("missing.gguf");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("the model file missing.gguf does not exist"));
  }
}

}  // namespace
}  // namespace fg
