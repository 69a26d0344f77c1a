// tests/test_runner_sampling.cpp — penalties and logprobs through the full-graph runner on the CPU
// backend: graph replay equals the unpadded eager run bit for bit (ids, logprobs, top lists and
// the masked, penalized logits) in mixed batches with padded rows, token masks on some requests
// (runner_sampling_support.h) and every buffer poisoned; the results
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

#include "runner_sampling_support.h"
#include "runner_test_support.h"
#include "sampling/cpu_sampler.h"
#include "sampling/sampling_math.h"
#include "test_support.h"

namespace fg {
namespace {

using ::testing::HasSubstr;
using test::expect_same_logprobs;
using test::mixed_params;
using test::TestRequest;

using RunnerSampling = test::RunnerSamplingTest<std::string>;

// Decode batches of 1 to 10 requests (buckets of 4, 8 and 16: padded rows) and mixed batches,
// several steps each, every sampled token appended to its request's output.
TEST_P(RunnerSampling, PenaltiesAndLogprobsGraphEqualsEagerInPaddedMixedBatches) {
  RunnerOptions options;
  options.max_num_tokens = 256;
  options.max_num_seqs = 16;
  options.capture_sizes = {4, 8, 16, 64, 128};
  options.max_penalty_entries = 4096;
  start_cpu_runner(GetParam(), options, 2048);
  std::mt19937 rng(2025);
  const int64_t replays = padded_mixed_rounds_graph_vs_eager(rng);
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
  start_cpu_runner(GetParam(), options, 2048);
  std::mt19937 rng(7);
  std::vector<TestRequest> requests = raw_logits_requests(rng, 0.0f);
  const test::RawAndSampledStep step = raw_and_sampled_step(requests);
  const std::vector<ScheduledRequest>& chunks = step.chunks;
  const std::vector<float>& raw = step.raw;
  const StepResult& result = step.result;
  EXPECT_TRUE(result.replayed);
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
    const std::vector<float> got(step.penalized.begin() + r * V, step.penalized.begin() + (r + 1) * V);
    EXPECT_TRUE(test::bitwise_equal(want, got)) << "penalized logits of request " << r;
    EXPECT_EQ(result.sampled[r], sample_row_cpu(want.data(), V, p, false).token) << "request " << r;
    // Item 4 over the raw logits.
    test::expect_logprobs_of_raw_logits(result, raw, V, r, p.num_logprobs);
  }
  // A step where nobody asks for logprobs returns none.
  EXPECT_TRUE(runner_->execute(step.plain).logprobs.empty());
}

// The same decode step of request A alone and between neighbours with other settings, graph and
// eager: identical id, logprob and top list (re-running a decode rewrites the same KV slot).
TEST_P(RunnerSampling, RequestResultsDoNotDependOnBatchNeighbours) {
  RunnerOptions options;
  options.max_num_tokens = 128;
  options.max_num_seqs = 8;
  options.capture_sizes = {1, 4, 8};
  start_cpu_runner(GetParam(), options, 2048);
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
  const StepResult alone = runner_->execute({next_chunk(a, 1)});
  for (int layout = 0; layout < 3; ++layout) {
    std::vector<ScheduledRequest> chunks;
    for (int i = 0; i < 1 + 2 * layout; ++i) chunks.push_back(next_chunk(others[i], 1));
    const size_t at = static_cast<size_t>(layout);
    chunks.insert(chunks.begin() + at, next_chunk(a, 1));
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
  start_cpu_runner(GetParam(), options, 2048);
  std::mt19937 rng(3);
  SamplingParams p;
  p.repetition_penalty = 1.2f;
  TestRequest r = request(rng, 40, 2, 1, p);
  std::string error;
  try {
    runner_->execute({next_chunk(r, 1)});
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_THAT(error, HasSubstr("max_penalty_entries = 8"));
  // Without the repetition penalty only the output is listed: it fits.
  r.sampling.repetition_penalty = 1.0f;
  r.sampling.presence_penalty = 1.0f;
  EXPECT_NO_THROW(runner_->execute({next_chunk(r, 1)}));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RunnerSampling, ::testing::ValuesIn(test::fixture_models()),
                         [](const auto& info) { return test::fixture_test_name(info.param); });

}  // namespace
}  // namespace fg
