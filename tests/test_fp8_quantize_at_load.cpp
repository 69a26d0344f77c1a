// tests/test_fp8_quantize_at_load.cpp — --quantization fp8 on the CPU backend: the BF16 fixture
// models with their linears quantized at load (a scale per output channel, inputs rounded per
// token) against transformers running the same quantization
// (scripts/fp8/make_quantize_at_load_reference.py), and the option's refusals.
//
// Tolerance: as tests/test_fp8_checkpoint.cpp explains for FP8 checkpoints, 1e-4 of the largest
// logit: the e4m3 values are the same on both sides, what differs is fp32 summation order (and
// rarely an input rounding that lands the other side of a midpoint). What the quantization costs
// against the BF16 reference is printed beside what it costs transformers (distance_to_bf16.json):
// 7-15% of the logits' norm on these random-weight models, in both, which is the scheme's (three
// mantissa bits for weights and inputs alike), not the engine's.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "backend/cpu/cpu_backend.h"
#include "gguf_test_support.h"
#include "runner_test_support.h"
#include "model/model_loader.h"
#include "runner/greedy_generator.h"
#include "test_support.h"

namespace fg {
namespace {

std::filesystem::path references() { return test::source_dir() / "tests" / "fixtures" / "fp8" / "quantized-at-load"; }

double norm_ratio(const std::vector<float>& got, const std::vector<float>& ref) {
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff += (static_cast<double>(got[i]) - ref[i]) * (static_cast<double>(got[i]) - ref[i]);
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(diff / norm);
}

class QuantizedAtLoad : public ::testing::TestWithParam<std::string> {};

TEST_P(QuantizedAtLoad, LogitsMatchTransformersQuantizingTheSameWay) {
  CpuBackend backend;
  LoadOptions options;
  options.quantize_fp8 = true;
  const LoadedModel loaded = load_model(test::model_fixture(GetParam()), options, backend);
  ASSERT_TRUE(loaded.config.quantization && loaded.config.quantization->quantize_at_load);
  for (const LayerWeights& w : loaded.weights.layers) {
    EXPECT_TRUE(w.qkv_fp8() && w.o_fp8() && w.gate_up_fp8() && w.down_fp8());
    EXPECT_EQ(w.q_in.scheme, ActivationScheme::kDynamicPerToken);
  }
  EXPECT_NE(loaded.weights.lm_head.dtype, DType::kF8E4M3);  // the LM head and embeddings stay
  const nlohmann::json torch_distance =
      nlohmann::json::parse(std::ifstream(references() / "distance_to_bf16.json"))[GetParam()];
  const std::vector<test::ReferencePrompt> bf16 =
      test::reference_logits(test::model_fixture(GetParam()) + "/reference.safetensors");
  const std::vector<test::ReferencePrompt> prompts =
      test::reference_logits((references() / (GetParam() + ".safetensors")).string());
  ASSERT_EQ(prompts.size(), 3u);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const test::ReferencePrompt& p = prompts[i];
    const int64_t T = static_cast<int64_t>(p.ids.size());
    LoadedModel copy = loaded;
    LlamaModel model(copy.config, std::move(copy.weights), backend, T, T);
    KvCache kv = allocate_kv_cache(backend, model.config(), (T + 15) / 16 + 2, 16, DType::kF32);
    const std::vector<float> got = generate_greedy(model, kv, p.ids, 1, /*keep_logits=*/true).prompt_logits;
    const float relative = test::max_abs_diff(got, p.logits) / test::max_abs(p.logits);
    ASSERT_EQ(bf16[i].ids, p.ids);
    std::printf("--quantization fp8 %s, prompt of %lld: max |diff| / max |ref| = %.3g against transformers "
                "quantized alike; ||diff|| / ||bf16 ref|| = %.4f (transformers: %.4f)\n",
                GetParam().c_str(), static_cast<long long>(T), relative, norm_ratio(got, bf16[i].logits),
                torch_distance[std::to_string(T)]["quantized"].get<double>());
    EXPECT_LE(relative, 1e-4f) << GetParam() << " prompt of " << T;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, QuantizedAtLoad, ::testing::ValuesIn(test::fixture_models()),
                         [](const auto& info) { return test::fixture_test_name(info.param); });

TEST(QuantizedAtLoadOption, Fp8CheckpointsAreRefusedNamingTheirOwnQuantization) {
  CpuBackend backend;
  LoadOptions options;
  options.quantize_fp8 = true;
  const std::string error = test::error_of([&] {
    load_model((test::source_dir() / "tests" / "fixtures" / "fp8" / "tiny-llama-ct-dynamic").string(), options,
               backend);
  });
  EXPECT_NE(error.find("quantized already"), std::string::npos) << error;
  EXPECT_NE(error.find("compressed-tensors"), std::string::npos) << error;
}

}  // namespace
}  // namespace fg
