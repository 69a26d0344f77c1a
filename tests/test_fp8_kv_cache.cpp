// tests/test_fp8_kv_cache.cpp — an FP8 KV cache (--kv-cache-dtype fp8) on the CPU backend: the
// BF16 fixture models with every cached key and value rounded through e4m3 (scale 1.0) against
// transformers whose attention sees its keys and values rounded the same way
// (scripts/fp8/make_kv_cache_reference.py); a checkpoint's own KV-cache scales.
//
// Tolerance: 1e-4 of the largest logit, as for the FP8 checkpoints (test_fp8_checkpoint.cpp): the
// e4m3 values are the same on both sides unless fp32 summation order puts a key or value on the
// other side of a rounding midpoint.
#include <gtest/gtest.h>

#include <cstdio>

#include "backend/cpu/cpu_backend.h"
#include "gguf_test_support.h"
#include "runner_test_support.h"
#include "model/model_loader.h"
#include "runner/greedy_generator.h"
#include "test_support.h"

namespace fg {
namespace {

class Fp8KvCache : public ::testing::TestWithParam<std::string> {};

TEST_P(Fp8KvCache, LogitsMatchTransformersRoundingKeysAndValuesAlike) {
  CpuBackend backend;
  const LoadedModel loaded = load_model(test::model_fixture(GetParam()), LoadOptions{}, backend);
  const std::vector<test::ReferencePrompt> prompts = test::reference_logits(
      (test::source_dir() / "tests" / "fixtures" / "fp8" / "kv-cache" / (GetParam() + ".safetensors")).string());
  ASSERT_EQ(prompts.size(), 3u);
  for (const test::ReferencePrompt& p : prompts) {
    const int64_t T = static_cast<int64_t>(p.ids.size());
    LoadedModel copy = loaded;
    LlamaModel model(copy.config, std::move(copy.weights), backend, T, T);
    KvCache kv = allocate_kv_cache(backend, model.config(), (T + 15) / 16 + 2, 16, DType::kF8E4M3);
    ASSERT_EQ(kv.layers[0].k.nbytes(), static_cast<size_t>(kv.layers[0].k.numel()));  // one byte per element
    const std::vector<float> got = generate_greedy(model, kv, p.ids, 1, /*keep_logits=*/true).prompt_logits;
    const float relative = test::max_abs_diff(got, p.logits) / test::max_abs(p.logits);
    std::printf("FP8 KV cache, %s, prompt of %lld: max |diff| / max |ref| = %.3g\n", GetParam().c_str(),
                static_cast<long long>(T), relative);
    EXPECT_LE(relative, 1e-4f) << GetParam() << " prompt of " << T;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Fp8KvCache, ::testing::ValuesIn(test::fixture_models()),
                         [](const auto& info) { return test::fixture_test_name(info.param); });

// A checkpoint with KV-cache scales (compressed-tensors kv_cache_scheme, self_attn.k_scale and
// v_scale per layer: scripts/fp8/make_fp8_fixtures.py, tiny-llama-ct-kv-static) against
// transformers rounding its keys and values with those scales, its FP8 linears rounding their
// inputs per token as for the other FP8 checkpoints.
TEST(Fp8KvCacheScales, CheckpointScalesReachTheCacheAndMatchTransformers) {
  CpuBackend backend;
  const std::string dir = (test::source_dir() / "tests" / "fixtures" / "fp8" / "tiny-llama-ct-kv-static").string();
  const LoadedModel loaded = load_model(dir, LoadOptions{}, backend);
  ASSERT_TRUE(loaded.config.quantization && loaded.config.quantization->kv_cache_scales);
  for (const LayerWeights& layer : loaded.weights.layers) {
    EXPECT_GT(layer.k_cache_scale, 0.0f);
    EXPECT_NE(layer.k_cache_scale, 1.0f);  // the checkpoint's, not the default
    EXPECT_NE(layer.v_cache_scale, 1.0f);
  }
  for (const test::ReferencePrompt& p : test::reference_logits(dir + "/reference.safetensors")) {
    const int64_t T = static_cast<int64_t>(p.ids.size());
    LoadedModel copy = loaded;
    LlamaModel model(copy.config, std::move(copy.weights), backend, T, T);
    KvCache kv = allocate_kv_cache(backend, model.config(), (T + 15) / 16 + 2, 16, DType::kF8E4M3);
    model.use_kv_cache_scales(kv);
    for (size_t l = 0; l < kv.layers.size(); ++l) {
      EXPECT_EQ(kv.layers[l].k_scale, loaded.weights.layers[l].k_cache_scale);
      EXPECT_EQ(kv.layers[l].v_scale, loaded.weights.layers[l].v_cache_scale);
    }
    const std::vector<float> got = generate_greedy(model, kv, p.ids, 1, /*keep_logits=*/true).prompt_logits;
    const float relative = test::max_abs_diff(got, p.logits) / test::max_abs(p.logits);
    std::printf("FP8 KV cache with checkpoint scales, prompt of %lld: max |diff| / max |ref| = %.3g\n",
                static_cast<long long>(T), relative);
    EXPECT_LE(relative, 1e-4f) << "prompt of " << T;
  }
}

// A cache in another dtype keeps no scales: the checkpoint's apply to an FP8 cache only.
TEST(Fp8KvCacheScales, OtherCachesIgnoreThem) {
  CpuBackend backend;
  const LoadedModel loaded = load_model(
      (test::source_dir() / "tests" / "fixtures" / "fp8" / "tiny-llama-ct-kv-static").string(), LoadOptions{}, backend);
  LlamaModel model(loaded.config, loaded.weights, backend, 4, 4);
  KvCache kv = allocate_kv_cache(backend, model.config(), 4, 16, DType::kF32);
  model.use_kv_cache_scales(kv);
  for (const KvCacheLayer& layer : kv.layers) {
    EXPECT_EQ(layer.k_scale, 1.0f);
    EXPECT_EQ(layer.v_scale, 1.0f);
  }
}

}  // namespace
}  // namespace fg
