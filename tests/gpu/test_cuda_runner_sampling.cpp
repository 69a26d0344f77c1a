// tests/gpu/test_cuda_runner_sampling.cpp — penalties and logprobs through the CUDA runner: graph
// replay equals the unpadded eager run bit for bit (sampled ids, the sampled token's logprob, the
// top lists and the penalized logits) in padded decode and mixed batches with every buffer
// poisoned, several steps per batch so that output counts grow; and the runner's logprobs follow
// the definition (sampling_params.h) on the raw logits of the same step, computed by the CPU
// reference row functions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "backend/backend_factory.h"
#include "gpu/gpu_test_support.h"
#include "model/model_loader.h"
#include "runner_sampling_support.h"
#include "runner_test_support.h"
#include "sampling/cpu_logprobs.h"
#include "sampling/sampling_math.h"
#include "test_support.h"

namespace fg {
namespace {

using test::BlockPool;
using test::expect_same_logprobs;
using test::mixed_params;
using test::same_bits;
using test::TestRequest;

class CudaRunnerSampling : public ::testing::TestWithParam<std::string> {
 protected:
  void build(RunnerOptions options, int64_t num_blocks) {
    const GpuBackendFactory gpu = cuda_backend_factory();
    backend_ = gpu.create(0);
    LoadOptions load;
    load.round_rope_inv_freq_to_bf16 = true;
    loaded_ = load_model(test::model_fixture(GetParam()), load, *backend_);
    GpuAttentionSpec spec;
    spec.name = "reference";  // the fixtures' head sizes (16, 32) are the reference attention's
    spec.max_tokens = options.max_num_tokens;
    spec.max_reqs = options.max_num_seqs;
    spec.max_context = 1024;
    spec.num_heads = loaded_.config.num_heads;
    spec.num_kv_heads = loaded_.config.num_kv_heads;
    spec.head_dim = loaded_.config.head_dim;
    spec.block_size = kBlockSize;
    gpu.set_attention(*backend_, spec);
    model_ = std::make_unique<LlamaModel>(loaded_.config, loaded_.weights, *backend_, options.max_num_tokens,
                                          options.max_num_seqs);
    kv_ = allocate_kv_cache(*backend_, loaded_.config, num_blocks, kBlockSize, DType::kBF16);
    test::poison_kv_cache(*backend_, kv_);
    pool_ = std::make_unique<BlockPool>(num_blocks);
    runner_ = std::make_unique<ModelRunner>(*model_, kv_, options, [](const std::string&) {});
    runner_->capture_graphs();
  }

  TestRequest request(std::mt19937& rng, int64_t prompt_len, int64_t generated, int64_t keep, SamplingParams p) {
    TestRequest r;
    const int32_t V = static_cast<int32_t>(loaded_.config.vocab_size);
    std::uniform_int_distribution<int32_t> token(0, V - 1);
    for (int64_t i = 0; i < prompt_len; ++i) r.tokens.push_back(token(rng));
    const int32_t base = token(rng) % (V - 8);
    for (int64_t i = 0; i < generated; ++i) r.tokens.push_back(base + static_cast<int32_t>(rng() % 8));
    r.prompt_len = prompt_len;
    const int64_t n = static_cast<int64_t>(r.tokens.size()) - keep;
    if (n > 0) {
      runner_->execute_eager({r.chunk(n, *pool_, kBlockSize)});
      r.computed = n;
    }
    r.sampling = p;
    return r;
  }

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
    expect_same_logprobs(graph.logprobs, eager.logprobs, what);
    for (size_t r = 0; r < graph.logprobs.size(); ++r) {
      const int32_t n = chunks[r].sampling.num_logprobs;
      EXPECT_EQ(static_cast<int64_t>(graph.logprobs[r].top.size()), std::max<int64_t>(n, 0)) << what;
      if (n >= 0) {
        EXPECT_LE(graph.logprobs[r].logprob, 0.0f) << what << " request " << r;
      }
    }
    return graph;
  }

  static constexpr int64_t kBlockSize = 16;
  std::unique_ptr<Backend> backend_;
  LoadedModel loaded_;
  std::unique_ptr<LlamaModel> model_;
  KvCache kv_;
  std::unique_ptr<BlockPool> pool_;
  std::unique_ptr<ModelRunner> runner_;
};

TEST_P(CudaRunnerSampling, PenaltiesAndLogprobsGraphEqualsEagerInPaddedMixedBatches) {
  FG_REQUIRE_GPU();
  RunnerOptions options;
  options.max_num_tokens = 256;
  options.max_num_seqs = 16;
  options.capture_sizes = {4, 8, 16, 64, 128};
  options.max_penalty_entries = 4096;
  build(options, 2048);
  std::mt19937 rng(2025);
  int64_t replays = 0;
  for (int round = 0; round < 8; ++round) {
    const bool mixed = round % 2 == 1;
    const int64_t batch = 1 + (round * 3) % 10;
    std::vector<TestRequest> requests;
    std::vector<int64_t> chunk_lens;
    for (int64_t i = 0; i < batch; ++i) {
      const int64_t chunk = mixed && i % 3 == 0 ? 1 + static_cast<int64_t>(rng() % 40) : 1;
      const int64_t prompt = 5 + static_cast<int64_t>(rng() % 60) + (chunk > 1 ? chunk : 0);
      requests.push_back(request(rng, prompt, chunk > 1 ? 0 : static_cast<int64_t>(rng() % 12), chunk,
                                 mixed_params(rng)));
      chunk_lens.push_back(chunk);
    }
    for (int step = 0; step < 3; ++step) {
      std::vector<ScheduledRequest> chunks;
      for (size_t i = 0; i < requests.size(); ++i)
        chunks.push_back(requests[i].chunk(chunk_lens[i], *pool_, kBlockSize));
      const StepResult result =
          expect_graph_equals_eager(chunks, "round " + std::to_string(round) + " step " + std::to_string(step));
      replays += result.replayed;
      for (size_t i = 0; i < requests.size(); ++i) {
        requests[i].computed += chunk_lens[i];
        requests[i].tokens.push_back(result.sampled[i]);
        requests[i].sampling.step += 1;
        chunk_lens[i] = 1;
      }
    }
  }
  EXPECT_GT(replays, 12);
}

// The logprobs the runner reports are those of the raw logits (read back from the same step run
// without penalties or logprobs): the top list and the sampled token's value, recomputed by the CPU
// reference, bit for bit (the logprob arithmetic is exact past the logits).
TEST_P(CudaRunnerSampling, LogprobsAreOfTheRawLogits) {
  FG_REQUIRE_GPU();
  RunnerOptions options;
  options.max_num_tokens = 128;
  options.max_num_seqs = 8;
  options.capture_sizes = {8};
  build(options, 512);
  std::mt19937 rng(7);
  std::vector<TestRequest> requests;
  for (int i = 0; i < 6; ++i) {
    SamplingParams p = mixed_params(rng);
    p.repetition_penalty = i % 2 ? 1.7f : 1.0f;
    p.frequency_penalty = i % 3 ? -1.0f : 0.5f;
    p.presence_penalty = 0.75f;
    p.num_logprobs = i == 4 ? -1 : i * 4;
    requests.push_back(request(rng, 10 + 7 * i, 6 + i, 1, p));
  }
  std::vector<ScheduledRequest> plain, chunks;
  for (TestRequest& r : requests) {
    chunks.push_back(r.chunk(1, *pool_, kBlockSize));
    plain.push_back(chunks.back());
    plain.back().sampling = SamplingParams{};
  }
  runner_->execute(plain);
  const std::vector<float> raw = test::copy_logits(*model_, 6);
  const StepResult result = runner_->execute(chunks);
  const int64_t V = loaded_.config.vocab_size;
  for (int64_t r = 0; r < 6; ++r) {
    const SamplingParams& p = chunks[r].sampling;
    if (p.num_logprobs < 0) continue;
    const RawLogprobRow lp = raw_logprobs_row(raw.data() + r * V, V, p.num_logprobs);
    EXPECT_TRUE(same_bits(result.logprobs[r].logprob,
                          sampling::token_logprob(raw[r * V + result.sampled[r]], lp.logit_max, lp.mass)))
        << "request " << r;
    ASSERT_EQ(result.logprobs[r].top.size(), lp.top.size());
    for (size_t k = 0; k < lp.top.size(); ++k) {
      EXPECT_EQ(result.logprobs[r].top[k].first, lp.top[k].first) << "request " << r << " rank " << k;
      EXPECT_TRUE(same_bits(result.logprobs[r].top[k].second, lp.top[k].second)) << "request " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaRunnerSampling, ::testing::ValuesIn(test::fixture_models()),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace fg
