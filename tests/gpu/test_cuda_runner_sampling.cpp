// tests/gpu/test_cuda_runner_sampling.cpp — token masks, penalties and logprobs through the CUDA
// runner: graph replay equals the unpadded eager run bit for bit (sampled ids, the sampled token's
// logprob, the top lists and the masked, penalized logits) in padded decode and mixed batches with
// every buffer poisoned, constrained and unconstrained requests mixed, several steps per batch so
// that output counts grow; the runner's logprobs follow the definition (sampling_params.h) on the
// raw logits of the same step, computed by the CPU reference row functions; and a masked step
// samples allowed tokens, with logprobs of the masked logits, leaving unconstrained rows as they
// are without masks.
#include <gtest/gtest.h>

#include <random>

#include "backend/backend_factory.h"
#include "gpu/gpu_test_support.h"
#include "runner_sampling_support.h"
#include "runner_test_support.h"
#include "test_support.h"

namespace fg {
namespace {

using test::mixed_params;
using test::TestRequest;

// Up to 8 requests, all in one bucket of 8.
RunnerOptions one_bucket_of_8(bool checked) {
  RunnerOptions options;
  options.max_num_tokens = 128;
  options.max_num_seqs = 8;
  options.capture_sizes = {8};
  options.check_graph_inputs = checked;
  return options;
}

class CudaRunnerSampling : public test::RunnerSamplingTest<std::string> {
 protected:
  void build(RunnerOptions options, int64_t num_blocks) {
    const GpuBackendFactory gpu = cuda_backend_factory();
    backend_ = gpu.create(0);
    loaded_ = test::load_fixture(GetParam(), *backend_);
    // The fixtures' head sizes (16, 32) are the reference attention's.
    gpu.set_attention(*backend_, "reference", attention_limits_for(options, 1024));
    start_runner(options, num_blocks, DType::kBF16);
  }
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
  const int64_t replays = padded_mixed_rounds_graph_vs_eager(rng);
  EXPECT_GT(replays, 12);
}

// The logprobs the runner reports are those of the raw logits (read back from the same step run
// without penalties or logprobs): the top list and the sampled token's value, recomputed by the CPU
// reference, bit for bit (the logprob arithmetic is exact past the logits).
TEST_P(CudaRunnerSampling, LogprobsAreOfTheRawLogits) {
  FG_REQUIRE_GPU();
  build(one_bucket_of_8(/*checked=*/false), 512);
  std::mt19937 rng(7);
  std::vector<TestRequest> requests = raw_logits_requests(rng, 0.75f);
  const test::RawAndSampledStep step = raw_and_sampled_step(requests);
  for (int64_t r = 0; r < 6; ++r)
    test::expect_logprobs_of_raw_logits(step.result, step.raw, vocab(), r, step.chunks[r].sampling.num_logprobs);
}

// The token mask through the CUDA runner (runner_sampling_support.h), in checked mode.
TEST_P(CudaRunnerSampling, MaskedStepFollowsTheDefinition) {
  FG_REQUIRE_GPU();
  build(one_bucket_of_8(/*checked=*/true), 512);
  std::mt19937 rng(13);
  expect_masked_step_follows_the_definition(rng);
}

// Without checked mode the runner fills the masks while the forward runs and the graph waits for
// them before it applies them (model_runner.h): the late fill equals the masks in place.
TEST_P(CudaRunnerSampling, MasksFilledWhileTheForwardRunsEqualMasksInPlace) {
  FG_REQUIRE_GPU();
  build(one_bucket_of_8(/*checked=*/false), 512);
  std::mt19937 rng(29);
  expect_late_masks_equal_masks_in_place(rng);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaRunnerSampling, ::testing::ValuesIn(test::fixture_models()),
                         [](const auto& info) { return test::fixture_test_name(info.param); });

}  // namespace
}  // namespace fg
