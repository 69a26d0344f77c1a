// tests/test_runner.cpp — the full-graph runner on the CPU backend: graph replay equals the
// unpadded eager run bit for bit on the real rows, for every batch size up to past the largest
// bucket, uniform decode and mixed prefill+decode, with every buffer poisoned beyond what the
// contract writes; and the fixture models still match transformers through the runner.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner_test_support.h"
#include "test_support.h"

namespace fg {
namespace {

using test::TestRequest;

using RunnerFixture = test::RunnerTest<std::string>;

// Uniform decode at every batch size from 1 to one past the largest bucket (33 runs eagerly).
TEST_P(RunnerFixture, UniformDecodeGraphEqualsEagerAtEveryBatchSize) {
  RunnerOptions options;
  options.max_num_tokens = 128;  // room for eager prefills of up to 70 tokens
  options.max_num_seqs = 40;
  options.capture_sizes = {1, 2, 4, 8, 16, 24, 32};
  start_cpu_runner(GetParam(), options, 1024);
  std::mt19937 rng(1234);
  const std::vector<StepResult> results = decode_at_every_batch_size(rng, 33, 70);
  for (int64_t batch = 1; batch <= 33; ++batch) {
    const StepResult& result = results[static_cast<size_t>(batch - 1)];
    EXPECT_EQ(result.replayed, batch <= 32) << batch;
    if (batch <= 32) {
      EXPECT_TRUE(result.bucket.uniform_decode);
    }
  }
  EXPECT_EQ(runner_->stats().graph_steps, 32);
}

// Mixed batches: prefill chunks of 1 to 300 tokens beside decodes, up to past the largest bucket.
TEST_P(RunnerFixture, MixedBatchesGraphEqualsEager) {
  RunnerOptions options;
  options.max_num_tokens = 640;
  options.max_num_seqs = 16;
  options.capture_sizes = {8, 16, 64, 128, 256, 512};
  start_cpu_runner(GetParam(), options, 2048);
  std::mt19937 rng(99);
  int64_t replays = 0;
  for (int round = 0; round < 12; ++round) {
    const MixedBatch batch = mixed_batch(rng, round, 40, 50);
    StepResult result = expect_graph_equals_eager(batch.chunks, "mixed round " + std::to_string(round));
    EXPECT_EQ(result.replayed, batch.tokens <= 512) << batch.tokens << " tokens";
    replays += result.replayed;
  }
  EXPECT_GT(replays, 6);
}

// Logits of every position (one decode graph step per prompt token) and the greedy continuation,
// through the runner's graphs, against transformers: the tolerance of test_model_reference.cpp.
TEST_P(RunnerFixture, FixtureModelsMatchTransformersThroughGraphs) {
  RunnerOptions options;
  options.max_num_tokens = 160;  // the 130-token prompt's prefill runs eagerly
  options.max_num_seqs = 4;
  options.capture_sizes = {1, 2, 4};
  start_cpu_runner(GetParam(), options, 1024);
  auto ref = SafetensorsFile::open(test::model_fixture(GetParam()) + "/reference.safetensors");
  const int64_t V = loaded_.config.vocab_size;
  for (int p = 0; p < 4; ++p) {
    const std::string prefix = "prompt_" + std::to_string(p) + ".";
    const auto ids = test::tensor_values<int32_t>(ref->tensor(*ref->find(prefix + "input_ids")));
    const auto logits = test::tensor_values<float>(ref->tensor(*ref->find(prefix + "logits")));
    const auto greedy = test::tensor_values<int32_t>(ref->tensor(*ref->find(prefix + "greedy")));
    const std::vector<float> got = logits_of_every_position(ids);
    ASSERT_EQ(got.size(), ids.size() * V);
    EXPECT_LE(test::max_abs_diff(got, logits), 1e-4f * test::max_abs(logits)) << "prompt " << p;

    // Greedy continuation: transformers' generate treated id 0 as padding (see greedy_context in
    // test_model_reference.cpp), so the continuation runs on the prompt without its zeros.
    TestRequest g;
    for (int32_t id : ids)
      if (id != 0) g.tokens.push_back(id);
    const int64_t prompt_len = static_cast<int64_t>(g.tokens.size());
    StepResult step = runner_->execute({next_chunk(g, prompt_len)});
    g.computed = prompt_len;
    std::vector<int32_t> generated = {step.sampled[0]};
    while (generated.size() < 16) {
      g.tokens.push_back(generated.back());
      step = runner_->execute({next_chunk(g, 1)});
      EXPECT_TRUE(step.replayed);
      ++g.computed;
      generated.push_back(step.sampled[0]);
    }
    EXPECT_EQ(generated, greedy) << "prompt " << p;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RunnerFixture, ::testing::ValuesIn(test::fixture_models()),
                         [](const auto& info) { return test::fixture_test_name(info.param); });

}  // namespace
}  // namespace fg
