// tests/test_runner.cpp — the full-graph runner on the CPU backend: graph replay equals the
// unpadded eager run bit for bit on the real rows, for every batch size up to past the largest
// bucket, uniform decode and mixed prefill+decode, with every buffer poisoned beyond what the
// contract writes; and the fixture models still match transformers through the runner.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "model/model_loader.h"
#include "runner_test_support.h"
#include "test_support.h"

namespace fg {
namespace {

using test::BlockPool;
using test::TestRequest;

class RunnerFixture : public ::testing::TestWithParam<std::string> {
 protected:
  void build(RunnerOptions options, int64_t num_blocks = 1024) {
    LoadOptions load;
    load.round_rope_inv_freq_to_bf16 = true;  // as the references were made; see test_model_reference.cpp
    loaded_ = load_model(test::model_fixture(GetParam()), load, backend_);
    model_ = std::make_unique<LlamaModel>(loaded_.config, loaded_.weights, backend_, options.max_num_tokens,
                                          options.max_num_seqs);
    kv_ = allocate_kv_cache(backend_, loaded_.config, num_blocks, kBlockSize, DType::kF32);
    test::poison_kv_cache(backend_, kv_);  // block 0 and unused blocks read as NaN
    pool_ = std::make_unique<BlockPool>(num_blocks);
    runner_ = std::make_unique<ModelRunner>(*model_, kv_, options, [](const std::string&) {});
    runner_->capture_graphs();
  }

  TestRequest random_request(std::mt19937& rng, int64_t min_len, int64_t max_len) {
    TestRequest r;
    const int64_t len = std::uniform_int_distribution<int64_t>(min_len, max_len)(rng);
    std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(loaded_.config.vocab_size) - 1);
    for (int64_t i = 0; i < len; ++i) r.tokens.push_back(token(rng));
    return r;
  }

  // Prefills `r` except its last `keep` tokens, eagerly, one request per step.
  void prefill(TestRequest& r, int64_t keep) {
    const int64_t n = static_cast<int64_t>(r.tokens.size()) - keep - r.computed;
    if (n <= 0) return;
    runner_->execute_eager({r.chunk(n, *pool_, kBlockSize)});
    r.computed += n;
  }

  // Runs `chunks` through execute() (graph where a bucket holds it) and through the unpadded eager
  // path, with poisoned buffers before each; expects identical logits bits and sampled ids.
  StepResult expect_graph_equals_eager(const std::vector<ScheduledRequest>& chunks, const std::string& what) {
    const int64_t reqs = static_cast<int64_t>(chunks.size());
    model_->fill_activations(0xFF);
    runner_->poison_step_buffers();
    StepResult graph = runner_->execute(chunks);
    const std::vector<float> graph_logits = test::copy_logits(*model_, reqs);
    model_->fill_activations(0xFF);
    runner_->poison_step_buffers();
    StepResult eager = runner_->execute_eager(chunks);
    const std::vector<float> eager_logits = test::copy_logits(*model_, reqs);
    EXPECT_TRUE(test::bitwise_equal(graph_logits, eager_logits)) << what << " bucket " << graph.bucket.to_string();
    EXPECT_EQ(graph.sampled, eager.sampled) << what;
    for (float x : eager_logits) EXPECT_TRUE(std::isfinite(x)) << what << ": a poisoned value reached the logits";
    return graph;
  }

  static constexpr int64_t kBlockSize = 16;
  CpuBackend backend_;
  LoadedModel loaded_;
  std::unique_ptr<LlamaModel> model_;
  KvCache kv_;
  std::unique_ptr<BlockPool> pool_;
  std::unique_ptr<ModelRunner> runner_;
};

// Uniform decode at every batch size from 1 to one past the largest bucket (33 runs eagerly).
TEST_P(RunnerFixture, UniformDecodeGraphEqualsEagerAtEveryBatchSize) {
  RunnerOptions options;
  options.max_num_tokens = 128;  // room for eager prefills of up to 70 tokens
  options.max_num_seqs = 40;
  options.capture_sizes = {1, 2, 4, 8, 16, 24, 32};
  build(options);
  std::mt19937 rng(1234);
  std::vector<TestRequest> requests;
  for (int i = 0; i < 33; ++i) {
    requests.push_back(random_request(rng, 2, 70));  // contexts cross block boundaries
    prefill(requests.back(), 1);
  }
  for (int64_t batch = 1; batch <= 33; ++batch) {
    std::vector<ScheduledRequest> chunks;
    for (int64_t r = 0; r < batch; ++r) chunks.push_back(requests[r].chunk(1, *pool_, kBlockSize));
    StepResult result = expect_graph_equals_eager(chunks, "decode batch " + std::to_string(batch));
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
  build(options, 2048);
  std::mt19937 rng(99);
  int64_t replays = 0, steps = 0;
  for (int round = 0; round < 12; ++round) {
    std::vector<TestRequest> requests;
    std::vector<int64_t> chunk_lens;
    const int num_prefills = std::uniform_int_distribution<int>(1, 3)(rng);
    const int num_decodes = std::uniform_int_distribution<int>(0, 6)(rng);
    for (int i = 0; i < num_prefills; ++i) {
      const int64_t chunk = round < 2 ? (round == 0 ? 1 : 300) : std::uniform_int_distribution<int64_t>(1, 300)(rng);
      requests.push_back(random_request(rng, chunk, chunk + 40));
      prefill(requests.back(), chunk);  // an earlier part of the prompt is already cached
      chunk_lens.push_back(chunk);
    }
    for (int i = 0; i < num_decodes; ++i) {
      requests.push_back(random_request(rng, 1, 50));
      prefill(requests.back(), 1);
      chunk_lens.push_back(1);
    }
    std::vector<ScheduledRequest> chunks;
    int64_t tokens = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      chunks.push_back(requests[i].chunk(chunk_lens[i], *pool_, kBlockSize));
      tokens += chunk_lens[i];
    }
    StepResult result = expect_graph_equals_eager(chunks, "mixed round " + std::to_string(round));
    EXPECT_EQ(result.replayed, tokens <= 512) << tokens << " tokens";
    replays += result.replayed;
    ++steps;
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
  build(options);
  auto ref = SafetensorsFile::open(test::model_fixture(GetParam()) + "/reference.safetensors");
  const int64_t V = loaded_.config.vocab_size;
  for (int p = 0; p < 4; ++p) {
    const std::string prefix = "prompt_" + std::to_string(p) + ".";
    const auto ids = test::tensor_values<int32_t>(ref->tensor(*ref->find(prefix + "input_ids")));
    const auto logits = test::tensor_values<float>(ref->tensor(*ref->find(prefix + "logits")));
    const auto greedy = test::tensor_values<int32_t>(ref->tensor(*ref->find(prefix + "greedy")));
    TestRequest r;
    r.tokens = ids;
    std::vector<float> got;
    for (size_t t = 0; t < ids.size(); ++t) {
      StepResult step = runner_->execute({r.chunk(1, *pool_, kBlockSize)});
      EXPECT_TRUE(step.replayed);
      ++r.computed;
      const auto row = test::copy_logits(*model_, 1);
      got.insert(got.end(), row.begin(), row.end());
    }
    ASSERT_EQ(got.size(), ids.size() * V);
    EXPECT_LE(test::max_abs_diff(got, logits), 1e-4f * test::max_abs(logits)) << "prompt " << p;

    // Greedy continuation: transformers' generate treated id 0 as padding (see greedy_context in
    // test_model_reference.cpp), so the continuation runs on the prompt without its zeros.
    TestRequest g;
    for (int32_t id : ids)
      if (id != 0) g.tokens.push_back(id);
    const int64_t prompt_len = static_cast<int64_t>(g.tokens.size());
    StepResult step = runner_->execute({g.chunk(prompt_len, *pool_, kBlockSize)});
    g.computed = prompt_len;
    std::vector<int32_t> generated = {step.sampled[0]};
    while (generated.size() < 16) {
      g.tokens.push_back(generated.back());
      step = runner_->execute({g.chunk(1, *pool_, kBlockSize)});
      EXPECT_TRUE(step.replayed);
      ++g.computed;
      generated.push_back(step.sampled[0]);
    }
    EXPECT_EQ(generated, greedy) << "prompt " << p;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RunnerFixture, ::testing::ValuesIn(test::fixture_models()), [](const auto& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
});

}  // namespace
}  // namespace fg
