// tests/test_runner_sampling.cpp — penalties and logprobs through the full-graph runner on the CPU
// backend: graph replay equals the unpadded eager run bit for bit (ids, logprobs, top lists and
// the penalized logits) in mixed batches with padded rows and every buffer poisoned; the results
// follow the definition (sampling_params.h) computed here from the raw logits; a request's results
// do not depend on its batch neighbours; and a step that needs more penalty entries than the
// runner holds fails naming the option.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "model/model_loader.h"
#include "runner_sampling_support.h"
#include "runner_test_support.h"
#include "sampling/cpu_logprobs.h"
#include "sampling/cpu_sampler.h"
#include "sampling/sampling_math.h"
#include "test_support.h"

namespace fg {
namespace {

using ::testing::HasSubstr;
using test::BlockPool;
using test::expect_same_logprobs;
using test::mixed_params;
using test::same_bits;
using test::TestRequest;

class RunnerSampling : public ::testing::TestWithParam<std::string> {
 protected:
  void build(RunnerOptions options, int64_t num_blocks = 2048) {
    LoadOptions load;
    load.round_rope_inv_freq_to_bf16 = true;
    loaded_ = load_model(test::model_fixture(GetParam()), load, backend_);
    model_ = std::make_unique<LlamaModel>(loaded_.config, loaded_.weights, backend_, options.max_num_tokens,
                                          options.max_num_seqs);
    kv_ = allocate_kv_cache(backend_, loaded_.config, num_blocks, kBlockSize, DType::kF32);
    test::poison_kv_cache(backend_, kv_);
    pool_ = std::make_unique<BlockPool>(num_blocks);
    runner_ = std::make_unique<ModelRunner>(*model_, kv_, options, [](const std::string&) {});
    runner_->capture_graphs();
  }

  int64_t vocab() const { return loaded_.config.vocab_size; }

  // A request with a prompt of prompt_len tokens and `generated` output tokens, all but the last
  // `keep` tokens already in the KV cache. Outputs repeat a few ids so that counts exceed 1.
  TestRequest request(std::mt19937& rng, int64_t prompt_len, int64_t generated, int64_t keep, SamplingParams p) {
    TestRequest r;
    std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(vocab()) - 1);
    for (int64_t i = 0; i < prompt_len; ++i) r.tokens.push_back(token(rng));
    const int32_t base = token(rng) % static_cast<int32_t>(vocab() - 8);
    for (int64_t i = 0; i < generated; ++i) r.tokens.push_back(base + static_cast<int32_t>(rng() % 8));
    r.prompt_len = prompt_len;
    const int64_t n = static_cast<int64_t>(r.tokens.size()) - keep;
    if (n > 0) {  // the earlier tokens, with neutral sampling (their sampled token is not used)
      runner_->execute_eager({r.chunk(n, *pool_, kBlockSize)});
      r.computed = n;
    }
    r.sampling = p;
    return r;
  }

  // execute() and execute_eager() of the same step, each after poisoning; expects identical ids,
  // logprobs and (penalized) logits.
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
    bool any = false;
    for (const ScheduledRequest& c : chunks) any = any || c.sampling.num_logprobs >= 0;
    EXPECT_EQ(graph.logprobs.size(), any ? chunks.size() : 0u) << what;
    for (size_t r = 0; r < graph.logprobs.size(); ++r) {
      const int32_t n = chunks[r].sampling.num_logprobs;
      EXPECT_EQ(static_cast<int64_t>(graph.logprobs[r].top.size()), std::max<int64_t>(n, 0)) << what;
      EXPECT_EQ(std::isnan(graph.logprobs[r].logprob), n < 0) << what << " request " << r;
      if (n >= 0) {
        EXPECT_LE(graph.logprobs[r].logprob, 0.0f) << what << " request " << r;
      }
    }
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

// Decode batches of 1 to 10 requests (buckets of 4, 8 and 16: padded rows) and mixed batches,
// several steps each, every sampled token appended to its request's output.
TEST_P(RunnerSampling, PenaltiesAndLogprobsGraphEqualsEagerInPaddedMixedBatches) {
  RunnerOptions options;
  options.max_num_tokens = 256;
  options.max_num_seqs = 16;
  options.capture_sizes = {4, 8, 16, 64, 128};
  options.max_penalty_entries = 4096;
  build(options);
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
      const std::string what = "round " + std::to_string(round) + " step " + std::to_string(step);
      const StepResult result = expect_graph_equals_eager(chunks, what);
      replays += result.replayed;
      for (size_t i = 0; i < requests.size(); ++i) {
        requests[i].computed += chunk_lens[i];
        requests[i].tokens.push_back(result.sampled[i]);  // the output grows: counts change
        requests[i].sampling.step += 1;
        chunk_lens[i] = 1;
      }
    }
  }
  EXPECT_GT(replays, 12);
}

// Through the runner, each request's results are the definition applied to its raw logits: the
// raw logits come from the same step run with penalties and logprobs off (the forward pass does not
// read them), and everything is recomputed here with the CPU reference row functions.
TEST_P(RunnerSampling, ResultsFollowTheDefinitionOnTheRawLogits) {
  RunnerOptions options;
  options.max_num_tokens = 128;
  options.max_num_seqs = 8;
  options.capture_sizes = {8};
  build(options);
  std::mt19937 rng(7);
  std::vector<TestRequest> requests;
  for (int i = 0; i < 6; ++i) {
    SamplingParams p = mixed_params(rng);
    p.repetition_penalty = i % 2 ? 1.7f : 1.0f;
    p.frequency_penalty = i % 3 ? -1.0f : 0.5f;
    p.presence_penalty = i == 5 ? 0.0f : 0.75f;
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
  EXPECT_TRUE(result.replayed);
  const std::vector<float> penalized = test::copy_logits(*model_, 6);
  const int64_t V = vocab();
  for (int64_t r = 0; r < 6; ++r) {
    const ScheduledRequest& c = chunks[r];
    const SamplingParams& p = c.sampling;
    // Item 0 over the request's prompt and output.
    std::vector<float> want(raw.begin() + r * V, raw.begin() + (r + 1) * V);
    std::vector<int32_t> count(V, 0);
    std::vector<bool> listed(V, false);
    for (int32_t t : c.output_ids) {
      ++count[t];
      listed[t] = true;
    }
    for (int32_t t : c.prompt_ids) listed[t] = listed[t] || p.repetition_penalty != 1.0f;
    for (int64_t t = 0; t < V; ++t)
      if (listed[t])
        want[t] = sampling::penalized_logit(want[t], p.repetition_penalty, p.frequency_penalty, p.presence_penalty,
                                            count[t]);
    const std::vector<float> got(penalized.begin() + r * V, penalized.begin() + (r + 1) * V);
    EXPECT_TRUE(test::bitwise_equal(want, got)) << "penalized logits of request " << r;
    EXPECT_EQ(result.sampled[r], sample_row_cpu(want.data(), V, p, false).token) << "request " << r;
    // Item 4 over the raw logits.
    if (p.num_logprobs < 0) {
      EXPECT_TRUE(std::isnan(result.logprobs[r].logprob) && result.logprobs[r].top.empty());
      continue;
    }
    const RawLogprobRow lp = raw_logprobs_row(raw.data() + r * V, V, p.num_logprobs);
    const float sampled = sampling::token_logprob(raw[r * V + result.sampled[r]], lp.logit_max, lp.mass);
    EXPECT_TRUE(same_bits(result.logprobs[r].logprob, sampled)) << "request " << r;
    ASSERT_EQ(result.logprobs[r].top.size(), lp.top.size());
    for (size_t k = 0; k < lp.top.size(); ++k) {
      EXPECT_EQ(result.logprobs[r].top[k].first, lp.top[k].first) << "request " << r << " rank " << k;
      EXPECT_TRUE(same_bits(result.logprobs[r].top[k].second, lp.top[k].second)) << "request " << r;
    }
  }
  // A step where nobody asks for logprobs returns none.
  EXPECT_TRUE(runner_->execute(plain).logprobs.empty());
}

// The same decode step of request A alone and between neighbours with other settings, graph and
// eager: identical id, logprob and top list (re-running a decode rewrites the same KV slot).
TEST_P(RunnerSampling, RequestResultsDoNotDependOnBatchNeighbours) {
  RunnerOptions options;
  options.max_num_tokens = 128;
  options.max_num_seqs = 8;
  options.capture_sizes = {1, 4, 8};
  build(options);
  std::mt19937 rng(99);
  SamplingParams pa;
  pa.temperature = 0.8f;
  pa.seed = 17;
  pa.repetition_penalty = 1.3f;
  pa.frequency_penalty = 0.4f;
  pa.num_logprobs = 7;
  TestRequest a = request(rng, 30, 9, 1, pa);
  std::vector<TestRequest> others;
  for (int i = 0; i < 5; ++i) others.push_back(request(rng, 20 + i, 3 + i, 1, mixed_params(rng)));
  const StepResult alone = runner_->execute({a.chunk(1, *pool_, kBlockSize)});
  for (int layout = 0; layout < 3; ++layout) {
    std::vector<ScheduledRequest> chunks;
    for (int i = 0; i < 1 + 2 * layout; ++i) chunks.push_back(others[i].chunk(1, *pool_, kBlockSize));
    const size_t at = static_cast<size_t>(layout);
    chunks.insert(chunks.begin() + at, a.chunk(1, *pool_, kBlockSize));
    for (bool graph : {true, false}) {
      const StepResult got = graph ? runner_->execute(chunks) : runner_->execute_eager(chunks);
      EXPECT_EQ(got.sampled[at], alone.sampled[0]) << "layout " << layout;
      expect_same_logprobs({got.logprobs[at]}, alone.logprobs, "layout " + std::to_string(layout));
    }
  }
}

TEST_P(RunnerSampling, TooManyPenaltyEntriesFailNamingTheOption) {
  RunnerOptions options;
  options.max_num_tokens = 128;
  options.max_num_seqs = 4;
  options.capture_sizes = {4};
  options.max_penalty_entries = 8;
  build(options);
  std::mt19937 rng(3);
  SamplingParams p;
  p.repetition_penalty = 1.2f;
  TestRequest r = request(rng, 40, 2, 1, p);
  std::string error;
  try {
    runner_->execute({r.chunk(1, *pool_, kBlockSize)});
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_THAT(error, HasSubstr("max_penalty_entries = 8"));
  // Without the repetition penalty only the output is listed: it fits.
  r.sampling.repetition_penalty = 1.0f;
  r.sampling.presence_penalty = 1.0f;
  EXPECT_NO_THROW(runner_->execute({r.chunk(1, *pool_, kBlockSize)}));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RunnerSampling, ::testing::ValuesIn(test::fixture_models()), [](const auto& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
});

}  // namespace
}  // namespace fg
