// tests/test_weights.cpp — weight loading against config.json: a dummy model written as a
// checkpoint loads back to the same logits, and checkpoints that contradict their config (a wrong
// shape, a missing or an unexpected tensor, an integer dtype) are refused naming the tensor.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "backend/cpu/cpu_backend.h"
#include "runner/greedy_generator.h"
#include "model/model_loader.h"
#include "model/safetensors.h"
#include "test_support.h"

namespace fg {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class WeightsCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fg_weights_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ofstream(dir_ / "config.json") << builtin_model_config_json();
    config_ = parse_model_config(builtin_model_config_json(), "builtin");
    weights_ = dummy_weights(config_, backend_, 7);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The dummy weights as named tensors, with an edit applied before writing.
  void write_checkpoint(const std::function<void(std::vector<NamedTensor>&)>& edit = {}) {
    std::vector<NamedTensor> tensors;
    for (const WeightSpec& spec : expected_weights(config_)) tensors.push_back({spec.name, lookup(spec.name)});
    if (edit) edit(tensors);
    write_safetensors((dir_ / "model.safetensors").string(), tensors);
  }
  Tensor lookup(const std::string& name) {
    if (name == "model.embed_tokens.weight") return weights_.embed_tokens;
    if (name == "model.norm.weight") return weights_.final_norm;
    if (name == "lm_head.weight") return weights_.lm_head;
    const auto& L = weights_.layers[std::stoi(name.substr(13))];
    const std::string rest = name.substr(name.find('.', 13) + 1);
    if (rest == "input_layernorm.weight") return L.input_norm;
    if (rest == "self_attn.q_proj.weight") return L.q_proj;
    if (rest == "self_attn.k_proj.weight") return L.k_proj;
    if (rest == "self_attn.v_proj.weight") return L.v_proj;
    if (rest == "self_attn.o_proj.weight") return L.o_proj;
    if (rest == "post_attention_layernorm.weight") return L.post_attention_norm;
    if (rest == "mlp.gate_proj.weight") return L.gate_proj;
    if (rest == "mlp.up_proj.weight") return L.up_proj;
    return L.down_proj;
  }
  std::string load_error() {
    try {
      load_model(dir_.string(), {}, backend_);
    } catch (const Error& e) {
      return e.what();
    }
    return "(loaded without error)";
  }

  CpuBackend backend_{1};
  fs::path dir_;
  ModelConfig config_;
  ModelWeights weights_;
};

TEST_F(WeightsCheckpoint, RoundTripGivesTheSameLogits) {
  write_checkpoint();
  LoadedModel loaded = load_model(dir_.string(), {}, backend_);
  const std::vector<int32_t> prompt = {1, 17, 300, 42, 5};
  LlamaModel from_disk(loaded.config, loaded.weights, backend_, 8, 8);
  LlamaModel in_memory(config_, weights_, backend_, 8, 8);
  KvCache kv = allocate_kv_cache(backend_, config_, 4, 16, DType::kF32);
  GreedyResult a = generate_greedy(from_disk, kv, prompt, 4, true);
  GreedyResult b = generate_greedy(in_memory, kv, prompt, 4, true);
  EXPECT_EQ(a.prompt_logits, b.prompt_logits);
  EXPECT_EQ(a.generated, b.generated);
}

TEST_F(WeightsCheckpoint, ShapeContradictingConfigIsRefused) {
  write_checkpoint([](std::vector<NamedTensor>& t) {
    for (auto& nt : t)
      if (nt.name == "model.layers.1.mlp.up_proj.weight") nt.tensor = nt.tensor.view({172, 256});
  });
  const std::string error = load_error();
  EXPECT_THAT(error, HasSubstr("model.layers.1.mlp.up_proj.weight"));
  EXPECT_THAT(error, HasSubstr("[172, 256]"));
  EXPECT_THAT(error, HasSubstr("[344, 128]"));
}

TEST_F(WeightsCheckpoint, MissingTensorIsRefused) {
  write_checkpoint([](std::vector<NamedTensor>& t) {
    t.erase(std::remove_if(t.begin(), t.end(), [](auto& nt) { return nt.name == "model.norm.weight"; }), t.end());
  });
  EXPECT_THAT(load_error(), HasSubstr("missing tensor 'model.norm.weight'"));
}

TEST_F(WeightsCheckpoint, UnexpectedTensorIsRefused) {
  write_checkpoint([this](std::vector<NamedTensor>& t) {
    t.push_back({"model.layers.0.mlp.experts.0.up_proj.weight", weights_.final_norm});
  });
  EXPECT_THAT(load_error(), HasSubstr("unexpected tensor 'model.layers.0.mlp.experts.0.up_proj.weight'"));
}

TEST_F(WeightsCheckpoint, IntegerWeightIsRefused) {
  std::vector<int32_t> ints(128, 1);
  write_checkpoint([&](std::vector<NamedTensor>& t) {
    for (auto& nt : t)
      if (nt.name == "model.norm.weight") nt.tensor = Tensor(ints.data(), DType::kI32, {128});
  });
  EXPECT_THAT(load_error(), HasSubstr("'model.norm.weight' has dtype I32"));
}

TEST_F(WeightsCheckpoint, RotaryInvFreqLeftoverIsIgnored) {
  std::vector<float> inv(16, 1.0f);
  write_checkpoint([&](std::vector<NamedTensor>& t) {
    t.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", Tensor(inv.data(), DType::kF32, {16})});
  });
  EXPECT_NO_THROW(load_model(dir_.string(), {}, backend_));
}

TEST(DummyWeights, DeterministicPerSeedAndDtype) {
  CpuBackend backend(1);
  ModelConfig config = parse_model_config(builtin_model_config_json(), "builtin");
  ModelWeights a = dummy_weights(config, backend, 3), b = dummy_weights(config, backend, 3),
               c = dummy_weights(config, backend, 4);
  const auto bytes = [](const Tensor& t) {
    return std::vector<char>(t.as<const char>(), t.as<const char>() + t.nbytes());
  };
  EXPECT_EQ(bytes(a.layers[1].q_proj), bytes(b.layers[1].q_proj));
  EXPECT_NE(bytes(a.layers[1].q_proj), bytes(c.layers[1].q_proj));
  EXPECT_EQ(a.layers[0].q_proj.dtype, DType::kBF16);
  // Norm weights sit near 1, matrices near 0 at 1/sqrt(fan_in).
  EXPECT_NEAR(bf16_to_float(a.final_norm.as<const uint16_t>()[5]), 1.0f, 0.11f);
  EXPECT_LE(std::fabs(bf16_to_float(a.layers[0].q_proj.as<const uint16_t>()[5])), 1.0f / std::sqrt(128.0f) + 1e-3f);
}

TEST(DummyWeights, AnyFixtureConfigRunsWithoutWeightsFile) {
  CpuBackend backend;
  for (const std::string& name : test::fixture_models()) {
    LoadOptions options;
    options.format = LoadFormat::kDummy;
    LoadedModel loaded = load_model(test::model_fixture(name), options, backend);
    LlamaModel model(loaded.config, loaded.weights, backend, 4, 1);
    KvCache kv = allocate_kv_cache(backend, loaded.config, 3, 16, DType::kF32);
    GreedyResult r = generate_greedy(model, kv, {1, 2, 3}, 3, false);
    EXPECT_EQ(r.generated.size(), 3u) << name;
  }
}

// The loader places each layer's q/k/v projections (and their biases) and its gate/up back to
// back in memory, so that a backend can run each group as one matmul (Backend::linear_group).
TEST(DummyWeights, PlaceEachLayersQkvAndGateUpBackToBack) {
  CpuBackend backend(1);
  auto follows = [](const Tensor& a, const Tensor& b) {
    return a.as<const char>() + a.nbytes() == b.as<const char>();
  };
  int biased = 0;
  for (const std::string& name : test::fixture_models()) {
    LoadOptions options;
    options.format = LoadFormat::kDummy;
    LoadedModel loaded = load_model(test::model_fixture(name), options, backend);
    for (size_t l = 0; l < loaded.weights.layers.size(); ++l) {
      const LayerWeights& w = loaded.weights.layers[l];
      EXPECT_TRUE(follows(w.q_proj, w.k_proj) && follows(w.k_proj, w.v_proj)) << name << ", layer " << l;
      EXPECT_TRUE(follows(w.gate_proj, w.up_proj)) << name << ", layer " << l;
      if (loaded.config.qkv_bias) {
        EXPECT_TRUE(follows(w.q_bias, w.k_bias) && follows(w.k_bias, w.v_bias)) << name << ", layer " << l;
      }
    }
    biased += loaded.config.qkv_bias ? 1 : 0;
  }
  EXPECT_GE(biased, 1) << "no fixture has q/k/v biases";
}

}  // namespace
}  // namespace fg
