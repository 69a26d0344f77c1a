// tests/test_token_mask.cpp — the token mask (sampling_params.h, item 0: a structured-output
// request's grammar bitmask, applied first of all) on the CPU: the reference op against a dense
// definition; sampled tokens allowed, greedy and drawn; the mask buffer's rows a step copies
// (runner/token_mask.h: none when no request is constrained); and, through the runner on the CPU
// backend, logprobs of the masked logits, unconstrained rows untouched by their neighbours' masks,
// and checked mode's rules for the buffer. Graph against eager with masked and unmasked requests
// in padded batches is part of the runner sampling tests (runner_sampling_support.h); the CUDA
// kernel is compared with this op in tests/gpu/test_token_mask_gpu.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/thread_pool.h"
#include "runner/token_mask.h"
#include "runner_sampling_support.h"
#include "runner_test_support.h"
#include "sampling/cpu_sampler.h"
#include "sampling/cpu_token_mask.h"
#include "test_support.h"
#include "token_mask_support.h"

namespace fg {
namespace {

using ::testing::HasSubstr;
using test::error_of;
using test::mask_allows;
using test::random_token_mask;

std::vector<float> normal_logits(int64_t rows, int64_t vocab, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(rows * vocab));
  for (float& v : logits) v = normal(rng);
  return logits;
}

// Row kinds of the op test: all ones, none allowed (left as it is), only bits past the vocabulary
// (none allowed either), then random masks of 1 to vocab tokens.
std::vector<int32_t> op_test_mask(int64_t r, int64_t vocab, std::mt19937& rng) {
  const int64_t words = token_mask_words(vocab);
  switch (r) {
    case 0: return std::vector<int32_t>(static_cast<size_t>(words), -1);
    case 1: return std::vector<int32_t>(static_cast<size_t>(words), 0);
    case 2: {
      std::vector<int32_t> m(static_cast<size_t>(words), 0);
      if (vocab % 32 != 0) m.back() = static_cast<int32_t>(~((1u << (vocab % 32)) - 1u));
      return m;
    }
    default: return random_token_mask(rng, vocab, 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(vocab)));
  }
}

TEST(TokenMaskOp, MasksExactlyTheTokensItDoesNotAllow) {
  std::mt19937 rng(17);
  ThreadPool pool(3);
  for (int64_t vocab : {1, 31, 32, 33, 320, 2049, 32001}) {
    constexpr int64_t kRows = 9;
    const int64_t words = token_mask_words(vocab);
    std::vector<int32_t> mask;
    for (int64_t r = 0; r < kRows; ++r) {
      const std::vector<int32_t> m = op_test_mask(r, vocab, rng);
      mask.insert(mask.end(), m.begin(), m.end());
    }
    const std::vector<float> raw = normal_logits(kRows, vocab, rng);
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
      std::vector<float> logits = raw;
      apply_token_mask_cpu(Tensor(logits.data(), DType::kF32, {kRows, vocab}),
                           Tensor(mask.data(), DType::kI32, {kRows, words}), p);
      for (int64_t r = 0; r < kRows; ++r) {
        const std::vector<int32_t> m(mask.begin() + r * words, mask.begin() + (r + 1) * words);
        const std::vector<float> want = test::masked_row(raw.data() + r * vocab, vocab, m);
        EXPECT_EQ(std::memcmp(want.data(), logits.data() + r * vocab, static_cast<size_t>(vocab) * 4), 0)
            << "vocab " << vocab << " row " << r;
        if (r <= 2) {
          EXPECT_EQ(std::memcmp(raw.data() + r * vocab, logits.data() + r * vocab, static_cast<size_t>(vocab) * 4), 0)
              << "vocab " << vocab << " row " << r << " is all ones or allows nothing: left as it is";
        }
      }
    }
  }
}

TEST(TokenMaskOp, RefusesAMaskOfTheWrongWidth) {
  std::vector<float> logits(2 * 64);
  std::vector<int32_t> mask(2 * 3, -1);
  EXPECT_THAT(error_of([&] {
                apply_token_mask_cpu(Tensor(logits.data(), DType::kF32, {2, 64}),
                                     Tensor(mask.data(), DType::kI32, {2, 3}), nullptr);
              }),
              HasSubstr("apply_token_mask: token_mask must be I32 [rows, 2] (ceil(64 / 32) words a row), got [2, 3]"));
}

// upload_token_mask on the CPU copies exactly the flagged rows, counts the publication it waited
// for, and refuses to run before the host published (there, ops run as they are called: a step
// that found no publication would otherwise apply stale rows).
TEST(TokenMaskUpload, CopiesFlaggedRowsOncePublished) {
  CpuBackend cpu(1);
  constexpr int64_t kRows = 4, kWords = 3;
  std::vector<int32_t> device(kRows * kWords, -1), mirror(kRows * kWords);
  std::iota(mirror.begin(), mirror.end(), 100);
  std::vector<int32_t> changed = {0, 1, 0, 1};
  uint32_t published = 0;
  std::vector<int32_t> state(1 + kRows, 0);
  int32_t& waited = state[0];
  TokenMaskUpload upload{mirror.data(), changed.data(), &published, Tensor(state.data(), DType::kI32, {1 + kRows})};
  const Tensor mask(device.data(), DType::kI32, {kRows, kWords});
  EXPECT_THAT(error_of([&] { cpu.upload_token_mask(mask, upload); }),
              HasSubstr("the step expects publication 1 of its mask rows and finds 0"));
  EXPECT_EQ(waited, 0);
  published = 1;
  cpu.upload_token_mask(mask, upload);
  EXPECT_EQ(waited, 1);
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t w = 0; w < kWords; ++w)
      EXPECT_EQ(device[r * kWords + w], changed[r] ? mirror[r * kWords + w] : -1) << "row " << r << " word " << w;
  EXPECT_THAT(error_of([&] { cpu.upload_token_mask(mask, upload); }),
              HasSubstr("the step expects publication 2 of its mask rows and finds 1"));
}

// The mask, then the sampler: every token drawn is allowed (at several temperatures and filters,
// over many seeds), and a greedy row takes the best allowed token although a disallowed one has the
// largest logit.
TEST(TokenMaskOp, SampledTokensAreAllowedGreedyAndDrawn) {
  constexpr int64_t kVocab = 1000, kRows = 48;
  std::mt19937 rng(23);
  std::vector<float> raw = normal_logits(kRows, kVocab, rng);
  std::vector<int32_t> mask;
  for (int64_t r = 0; r < kRows; ++r) {
    std::vector<int32_t> m = random_token_mask(rng, kVocab, 1 + r);
    // The row's largest logit goes to a token the mask does not allow.
    int64_t banned = 0;
    while (mask_allows(m, banned)) ++banned;
    raw[static_cast<size_t>(r * kVocab + banned)] = 50.0f;
    mask.insert(mask.end(), m.begin(), m.end());
  }
  const int64_t words = token_mask_words(kVocab);
  std::vector<float> logits = raw;
  apply_token_mask_cpu(Tensor(logits.data(), DType::kF32, {kRows, kVocab}),
                       Tensor(mask.data(), DType::kI32, {kRows, words}), nullptr);
  int64_t drawn = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    const std::vector<int32_t> m(mask.begin() + r * words, mask.begin() + (r + 1) * words);
    const float* row = logits.data() + r * kVocab;
    SamplingParams greedy;
    const RowSampleDetail g = sample_row_cpu(row, kVocab, greedy, true);
    int64_t best = -1;
    for (int64_t t = 0; t < kVocab; ++t)
      if (mask_allows(m, t) && (best < 0 || raw[static_cast<size_t>(r * kVocab + t)] >
                                                raw[static_cast<size_t>(r * kVocab + best)]))
        best = t;
    EXPECT_EQ(g.token, best) << "row " << r;
    EXPECT_TRUE(std::isfinite(g.logprob) && g.logprob <= 0.0f) << "row " << r;
    for (int64_t seed = 0; seed < 40; ++seed) {
      SamplingParams p;
      p.temperature = seed % 4 == 0 ? 0.3f : 1.5f;
      p.top_k = seed % 3 == 0 ? 3 : 0;
      p.top_p = seed % 5 == 0 ? 0.8f : 1.0f;
      p.min_p = seed % 7 == 0 ? 0.05f : 0.0f;
      p.seed = seed * 7919 + r;
      p.step = seed;
      const RowSampleDetail d = sample_row_cpu(row, kVocab, p, true);
      EXPECT_TRUE(mask_allows(m, d.token)) << "row " << r << " seed " << seed << " drew " << d.token;
      EXPECT_TRUE(std::isfinite(d.logprob)) << "row " << r << " seed " << seed;
      drawn += d.sampled;
    }
  }
  EXPECT_GT(drawn, kRows * 30);
}

// The rows of the mask buffer a step writes: its constrained rows, and the rows the step before
// constrained (reset to all ones); nothing when neither has any.
TEST(TokenMaskRows, StagesOnlyConstrainedAndPreviouslyConstrainedRows) {
  constexpr int64_t kRows = 8, kWords = 3;
  TokenMaskRows rows(kRows, kWords);
  std::vector<int32_t> mirror(kRows * kWords, -1);
  const std::vector<int32_t> a = {1, 2, 3}, b = {4, 5, 6}, c = {7, 8, 9};
  const auto step = [&](std::vector<std::vector<int32_t>*> masks) {
    std::vector<ScheduledRequest> requests(masks.size());
    for (size_t r = 0; r < masks.size(); ++r)
      if (masks[r]) requests[r].token_mask = *masks[r];
    std::vector<std::pair<int64_t, int64_t>> runs;
    for (const TokenMaskRows::Run& run : rows.stage(requests, mirror.data())) runs.emplace_back(run.first, run.count);
    return runs;
  };
  using Runs = std::vector<std::pair<int64_t, int64_t>>;
  std::vector<int32_t> ma = a, mb = b, mc = c;
  EXPECT_EQ(step({nullptr, nullptr, nullptr}), Runs{});
  EXPECT_EQ(step({nullptr, &ma, &mb, nullptr, nullptr, &mc}), (Runs{{1, 2}, {5, 1}}));
  EXPECT_EQ(std::vector<int32_t>(mirror.begin() + 3, mirror.begin() + 9), (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(rows.constrained(1) && rows.constrained(2) && !rows.constrained(3) && rows.constrained(5));
  // Row 1 reset, row 2 rewritten, row 5 reset; a shorter step.
  EXPECT_EQ(step({nullptr, nullptr, &mc}), (Runs{{1, 2}, {5, 1}}));
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t w = 0; w < kWords; ++w)
      EXPECT_EQ(mirror[r * kWords + w], r == 2 ? c[w] : -1) << "row " << r << " word " << w;
  EXPECT_EQ(step({nullptr, nullptr, nullptr, nullptr}), (Runs{{2, 1}}));
  EXPECT_EQ(step({nullptr}), Runs{});
  EXPECT_TRUE(std::all_of(mirror.begin(), mirror.end(), [](int32_t w) { return w == -1; }));
  // A mask of the wrong width is refused before anything changes.
  step({&ma});
  std::vector<int32_t> short_mask = {1, 2};
  EXPECT_THAT(error_of([&] { step({nullptr, &short_mask}); }),
              HasSubstr("request 1 of the step carries a token mask of 2 words; the vocabulary needs 3"));
  EXPECT_TRUE(rows.constrained(0));
  EXPECT_EQ(step({}), (Runs{{0, 1}}));
}

using RunnerTokenMask = test::RunnerSamplingTest<std::string>;

// Constrained requests sample allowed tokens, greedy and drawn; logprobs are those of the masked
// raw logits; unconstrained requests of the same step are bit-identical to the step without masks.
// In checked mode, which accepts every step of it.
TEST_P(RunnerTokenMask, MaskedStepFollowsTheDefinition) {
  RunnerOptions options;
  options.max_num_tokens = 128;
  options.max_num_seqs = 8;
  options.capture_sizes = {8};
  options.check_graph_inputs = true;
  start_cpu_runner(GetParam(), options, 2048);
  std::mt19937 rng(13);
  expect_masked_step_follows_the_definition(rng);
}

// Masks given by fill_masks (the engine's way) equal masks in place; on the CPU the runner fills
// before the step, which runs as it is launched.
TEST_P(RunnerTokenMask, MasksFilledByTheExecutorEqualMasksInPlace) {
  RunnerOptions options;
  options.max_num_tokens = 128;
  options.max_num_seqs = 8;
  options.capture_sizes = {8};
  start_cpu_runner(GetParam(), options, 2048);
  std::mt19937 rng(29);
  expect_late_masks_equal_masks_in_place(rng);
}

// Up to 8 requests in buckets of 4 and 8, in checked mode.
RunnerOptions checked_options() {
  RunnerOptions options;
  options.max_num_tokens = 64;
  options.max_num_seqs = 8;
  options.capture_sizes = {4, 8};
  options.check_graph_inputs = true;
  return options;
}

// Decode steps of 3 requests (a bucket of 4: one padded row), each constraining the requests its
// case lists; the mask bytes each step copies.
TEST_P(RunnerTokenMask, AStepWithoutConstrainedRequestsCopiesNoMaskBytes) {
  start_cpu_runner(GetParam(), checked_options(), 512);
  std::mt19937 rng(3);
  std::vector<test::TestRequest> requests;
  for (int i = 0; i < 3; ++i) requests.push_back(request(rng, 12 + 5 * i, 2, 1, test::mixed_params(rng)));
  const int64_t row_bytes = token_mask_words(vocab()) * 4;
  // Which requests each step constrains, and the rows it must copy: the constrained ones, and the
  // previous step's that are not (reset to all ones), in runs of consecutive rows.
  struct Case {
    std::vector<bool> constrained;
    int64_t rows, copies;
  };
  const std::vector<Case> cases = {
      {{false, false, false}, 0, 0},  // nothing constrained, before or now: no mask bytes
      {{false, true, true}, 2, 1},    // rows 1 and 2: one run
      {{true, false, true}, 3, 1},    // row 0 new, row 1 reset, row 2 rewritten
      {{false, false, false}, 2, 2},  // rows 0 and 2 reset
      {{false, false, false}, 0, 0},  // nothing again
      {{false, false, false}, 0, 0},
  };
  for (size_t s = 0; s < cases.size(); ++s) {
    std::vector<ScheduledRequest> chunks;
    for (size_t i = 0; i < requests.size(); ++i) {
      requests[i].token_mask = cases[s].constrained[i] ? random_token_mask(rng, vocab(), 40) : std::vector<int32_t>{};
      chunks.push_back(next_chunk(requests[i], 1));
    }
    const RunnerStats before = runner_->stats();
    const StepResult result = runner_->execute(chunks);
    EXPECT_TRUE(result.replayed);
    EXPECT_EQ(runner_->stats().mask_bytes_copied - before.mask_bytes_copied, cases[s].rows * row_bytes)
        << "step " << s;
    EXPECT_EQ(runner_->stats().mask_copies - before.mask_copies, cases[s].copies) << "step " << s;
    for (size_t i = 0; i < requests.size(); ++i) {
      if (cases[s].constrained[i]) {
        EXPECT_TRUE(mask_allows(requests[i].token_mask, result.sampled[i])) << "step " << s;
      }
      requests[i].computed += 1;
      requests[i].tokens.push_back(result.sampled[i]);
    }
  }
}

// Checked mode reads the mask buffer's host mirror: a padded row or an unconstrained request's row
// that is not all ones, and a mask that allows no token, are refused by field, row and word. A
// mask of the wrong width is refused naming the request, and the runner goes on.
TEST_P(RunnerTokenMask, CheckedModeRefusesAWrongFillOfTheMaskBuffer) {
  start_cpu_runner(GetParam(), checked_options(), 512);
  std::mt19937 rng(8);
  std::vector<test::TestRequest> requests;
  for (int i = 0; i < 3; ++i) requests.push_back(request(rng, 10 + 3 * i, 1, 1, SamplingParams{}));
  requests[1].token_mask = random_token_mask(rng, vocab(), 7);
  const auto step = [&] {
    std::vector<ScheduledRequest> chunks;
    for (test::TestRequest& r : requests) chunks.push_back(next_chunk(r, 1));
    return chunks;
  };
  const int64_t W = token_mask_words(vocab());
  const auto expect_refused = [&](int64_t word, const std::string& message) {
    runner_->set_mask_staging_hook([word](const StepLayout&, int32_t* mirror) { mirror[word] = 0; });
    EXPECT_THAT(error_of([&] { runner_->execute(step()); }), HasSubstr(message));
    runner_->set_mask_staging_hook({});
  };
  expect_refused(3 * W, "checked mode: token_mask[3][0] = 0x00000000, expected 0xffffffff (padded rows allow every "
                        "token (all ones))");
  expect_refused(2 * W + 1, "checked mode: token_mask[2][1] = 0x00000000, expected 0xffffffff (an unconstrained "
                            "request's row allows every token (all ones))");
  // A constrained row that allows nothing (the bits past the vocabulary name no token).
  std::vector<int32_t> nothing(static_cast<size_t>(W), 0);
  if (vocab() % 32 != 0) nothing.back() = static_cast<int32_t>(~((1u << (vocab() % 32)) - 1u));
  requests[1].token_mask = nothing;
  EXPECT_THAT(error_of([&] { runner_->execute(step()); }),
              HasSubstr("checked mode: token_mask[1] allows no token of the vocabulary of " +
                        std::to_string(vocab())));
  requests[1].token_mask.pop_back();
  EXPECT_THAT(error_of([&] { runner_->execute(step()); }),
              HasSubstr("request 1 of the step carries a token mask of " + std::to_string(W - 1) + " words"));
  // A correct step still runs, checked, and its constrained request samples an allowed token.
  requests[1].token_mask = random_token_mask(rng, vocab(), 7);
  const StepResult result = runner_->execute(step());
  EXPECT_TRUE(result.replayed);
  EXPECT_TRUE(mask_allows(requests[1].token_mask, result.sampled[1]));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RunnerTokenMask, ::testing::ValuesIn(test::fixture_models()),
                         [](const auto& info) { return test::fixture_test_name(info.param); });

}  // namespace
}  // namespace fg
