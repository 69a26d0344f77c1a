// tests/test_runner_fp8.cpp — the full-graph runner on the CPU backend with FP8 linears: graph
// replay equals the unpadded eager run bit for bit on the real rows (uniform decode at every batch
// size past the largest bucket, mixed prefill+decode), for FP8 checkpoints with per-token and with
// static input scales, for a BF16 model quantized at load, and for a BF16 model over an FP8 KV cache. Per-token scales must not let a
// padded row reach a real one, and static ones must round every row alike.
#include <gtest/gtest.h>

#include "runner_test_support.h"
#include "gguf_test_support.h"
#include "test_support.h"

namespace fg {
namespace {

class RunnerFp8 : public test::RunnerTest<std::string> {
 protected:
  void start(const RunnerOptions& options, int64_t num_blocks) {
    backend_ = std::make_unique<CpuBackend>();
    LoadOptions load;
    std::string path = (test::source_dir() / "tests" / "fixtures" / "fp8" / GetParam()).string();
    const bool fp8_cache = GetParam() == "tiny-llama-fp8-kv-cache";
    if (GetParam() == "tiny-llama-quantized-at-load") {
      load.quantize_fp8 = true;
      path = test::model_fixture("tiny-llama");
    }
    if (fp8_cache) path = test::model_fixture("tiny-llama");
    loaded_ = load_model(path, load, *backend_);
    ASSERT_TRUE(fp8_cache || loaded_.weights.layers[0].any_fp8());
    start_runner(options, num_blocks, fp8_cache ? DType::kF8E4M3 : DType::kF32);
  }
};

TEST_P(RunnerFp8, UniformDecodeGraphEqualsEagerAtEveryBatchSize) {
  RunnerOptions options;
  options.max_num_tokens = 128;
  options.max_num_seqs = 40;
  options.capture_sizes = {1, 2, 4, 8, 16, 24, 32};
  start(options, 1024);
  std::mt19937 rng(1234);
  const std::vector<StepResult> results = decode_at_every_batch_size(rng, 33, 70);
  for (int64_t batch = 1; batch <= 33; ++batch) EXPECT_EQ(results[static_cast<size_t>(batch - 1)].replayed, batch <= 32);
}

TEST_P(RunnerFp8, MixedBatchesGraphEqualsEager) {
  RunnerOptions options;
  options.max_num_tokens = 640;
  options.max_num_seqs = 16;
  options.capture_sizes = {8, 16, 64, 128, 256, 512};
  start(options, 2048);
  std::mt19937 rng(99);
  for (int round = 0; round < 6; ++round) {
    const MixedBatch batch = mixed_batch(rng, round, 40, 50);
    const StepResult result = expect_graph_equals_eager(batch.chunks, "mixed round " + std::to_string(round));
    EXPECT_EQ(result.replayed, batch.tokens <= 512) << batch.tokens << " tokens";
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RunnerFp8,
                         ::testing::Values("tiny-llama-ct-dynamic", "tiny-llama-fp8-static", "tiny-qwen2-ct-static",
                                           "tiny-llama-quantized-at-load", "tiny-llama-fp8-kv-cache"),
                         [](const auto& info) { return test::fixture_test_name(info.param); });

}  // namespace
}  // namespace fg
