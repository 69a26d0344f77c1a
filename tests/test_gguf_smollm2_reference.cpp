// tests/test_gguf_smollm2_reference.cpp — a trained model against the outside truth on the CPU:
// SmolLM2-135M-Instruct from its Q4_1 GGUF file, against transformers running the same file in
// float32 (tests/smollm2_reference_support.h), over six prompts of 5 to 1,000 tokens (a chat
// prompt, prose, and Genesis): the full logits of the last position, the top-20 logits of every
// position, and 32-token greedy continuations.
//
// Tolerance. Both sides dequantize Q4_1 exactly (the dequantizer is bit-identical to gguf-py's)
// and compute in float32; only summation order and the exp/rsqrt implementations differ. Those
// reorderings are ~1e-6 relative per op and grow through 30 layers and 1,000 positions to ~1e-5
// of the logits' scale; 1e-3 (the acceptance bound) keeps a 100x margin while any wrong index,
// mask or scale is O(1). A greedy token is compared where the reference's margin exceeds 2x that
// bound, so the tolerance alone cannot flip it.
#include <gtest/gtest.h>

#include <iostream>

#include "backend/cpu/cpu_backend.h"
#include "model/model_loader.h"
#include "smollm2_reference_support.h"

namespace fg {
namespace {

constexpr double kTolerance = 1e-3;

TEST(GgufSmolLM2Reference, CpuMatchesTransformers) {
  FG_REQUIRE_SMOLLM2();
  const auto prompts = test::smollm2_reference_prompts();
  ASSERT_GE(prompts.size(), 5u);
  CpuBackend backend(0);
  const LoadedModel loaded = load_model(test::smollm2_path().string(), {}, backend);
  size_t longest = 0, greedy_checked = 0, greedy_total = 0;
  for (const auto& p : prompts) {
    const int64_t T = static_cast<int64_t>(p.ids.size());
    longest = std::max(longest, p.ids.size());
    LoadedModel copy = loaded;  // shares the weights
    LlamaModel model(copy.config, std::move(copy.weights), backend, T, T);
    const GreedyResult got = test::smollm2_greedy(model, DType::kF32, p);
    const auto c = test::compare_smollm2(p, got, loaded.config.vocab_size, 2 * kTolerance);
    std::cout << p.name << " (" << T << " tokens): last position max " << c.last_max_rel << ", top-20 max "
              << c.top_max_rel << " relative; greedy " << c.greedy_checked << "/" << p.greedy.size()
              << " compared\n";
    EXPECT_LE(c.last_max_rel, kTolerance) << p.name;
    EXPECT_LE(c.top_max_rel, kTolerance) << p.name;
    EXPECT_EQ(c.top1_mismatches, "") << p.name;
    EXPECT_EQ(c.greedy_mismatch, "") << p.name;
    greedy_checked += c.greedy_checked;
    greedy_total += p.greedy.size();
  }
  EXPECT_GE(longest, 1000u);
  // Most steps of a trained model's greedy continuation have a clear winner; a comparison that
  // checked almost none would prove nothing.
  EXPECT_GE(greedy_checked * 2, greedy_total);
}

}  // namespace
}  // namespace fg
