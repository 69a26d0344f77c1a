// tests/test_perplexity.cpp — the arithmetic of `fullgraph perplexity` (cli/perplexity.h) on
// hand-made inputs: the chunking, the scored window of a chunk, BOS at each chunk's start, the
// estimate and its error (llama-perplexity's), and the token-id list reader.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cli/perplexity.h"
#include "test_support.h"

namespace fg::cli {
namespace {

using ::testing::HasSubstr;

TEST(Perplexity, ChunksAreWholeContextsAndTheSecondHalfIsScored) {
  const PerplexityPlan even = plan_perplexity(/*n_tokens=*/21, /*context=*/8, /*max_chunks=*/0);
  EXPECT_EQ(even.n_chunks, 2);  // floor(21 / 8): the last 5 tokens are not used
  EXPECT_EQ(even.first, 4);
  EXPECT_EQ(even.scored_per_chunk(), 3);  // positions 4, 5, 6 predict tokens 5, 6, 7
  const PerplexityPlan odd = plan_perplexity(10, 5, 0);
  EXPECT_EQ(odd.n_chunks, 2);
  EXPECT_EQ(odd.first, 2);
  EXPECT_EQ(odd.scored_per_chunk(), 2);  // positions 2, 3
  const PerplexityPlan smallest = plan_perplexity(4, 2, 0);
  EXPECT_EQ(smallest.first, 1);
  EXPECT_EQ(smallest.scored_per_chunk(), 0);  // N = 2 scores nothing, as in llama-perplexity
  EXPECT_EQ(plan_perplexity(100, 8, 3).n_chunks, 3);   // --chunks 3
  EXPECT_EQ(plan_perplexity(100, 8, 50).n_chunks, 12);  // more than there are: all
}

TEST(Perplexity, RefusesATooShortInputOrContextNamingTheCounts) {
  EXPECT_THAT(test::error_of([] { plan_perplexity(15, 8, 0); }),
              HasSubstr("the input holds 15 tokens, fewer than the 16 (2 x --context 8)"));
  EXPECT_THAT(test::error_of([] { plan_perplexity(100, 1, 0); }), HasSubstr("--context 1: a chunk needs at least 2"));
  EXPECT_THAT(test::error_of([] { plan_perplexity(100, 0, 0); }), HasSubstr("--context 0"));
  EXPECT_EQ(test::error_of([] { plan_perplexity(16, 8, 0); }), "(no error)");
}

TEST(Perplexity, EachChunkIsItsOwnSliceWithBosInFront) {
  const std::vector<int32_t> tokens = {10, 11, 12, 13, 14, 15, 16, 17, 18};
  const PerplexityPlan plan = plan_perplexity(9, 4, 0);
  EXPECT_EQ(chunk_tokens(tokens, plan, 0, std::nullopt), (std::vector<int32_t>{10, 11, 12, 13}));
  EXPECT_EQ(chunk_tokens(tokens, plan, 1, std::nullopt), (std::vector<int32_t>{14, 15, 16, 17}));
  EXPECT_EQ(chunk_tokens(tokens, plan, 1, 1), (std::vector<int32_t>{1, 15, 16, 17}));  // replaced, not inserted
}

TEST(Perplexity, ScoresOnlyTheWindowInDouble) {
  const PerplexityPlan plan = plan_perplexity(12, 6, 0);  // first 3: entries 3 and 4 of 5 are scored
  const std::vector<float> logprobs = {-100.0f, -100.0f, -100.0f, -0.5f, -2.25f};
  const ChunkScore s = score_chunk(logprobs, plan);
  EXPECT_EQ(s.n_scored, 2);
  EXPECT_DOUBLE_EQ(s.nll_sum, 2.75);
  EXPECT_DOUBLE_EQ(s.nll_sq_sum, 0.25 + 2.25 * 2.25);
}

TEST(Perplexity, EstimateIsExpOfTheMeanWithLlamaCppsStandardError) {
  // NLLs 1, 2 (chunk one) and 3, 4 (chunk two): mean 2.5, E[x^2] - E[x]^2 = 7.5 - 6.25 = 1.25.
  const std::vector<ChunkScore> chunks = {{3.0, 5.0, 2}, {7.0, 25.0, 2}};
  const PerplexityEstimate e = estimate_perplexity(chunks);
  EXPECT_EQ(e.n_scored, 4);
  EXPECT_DOUBLE_EQ(e.nll_mean, 2.5);
  EXPECT_DOUBLE_EQ(e.ppl, std::exp(2.5));
  EXPECT_NEAR(e.ppl_error, std::exp(2.5) * std::sqrt(1.25 / 3.0), 1e-12);
  // The running estimate after the first chunk alone.
  EXPECT_DOUBLE_EQ(estimate_perplexity(std::span(chunks).first(1)).ppl, std::exp(1.5));
  // Every NLL equal: no spread, no error (llama-perplexity's variance, E[x^2] - E[x]^2, which can
  // also round below zero for equal values; either reads as zero).
  const std::vector<ChunkScore> flat = {{0.5, 0.25, 1}, {1.0, 0.5, 2}};
  EXPECT_EQ(estimate_perplexity(flat).ppl_error, 0.0);
  EXPECT_DOUBLE_EQ(estimate_perplexity(flat).ppl, std::exp(0.5));
}

TEST(Perplexity, ReadsTokenIdsSeparatedByCommasOrWhitespace) {
  EXPECT_EQ(parse_token_id_list("1, 2 3\n4,,5\t\n", "f"), (std::vector<int32_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(parse_token_id_list("2147483647", "f"), (std::vector<int32_t>{2147483647}));
  EXPECT_THAT(test::error_of([] { parse_token_id_list("1, 2, x7", "--token-ids a.txt"); }),
              HasSubstr("--token-ids a.txt: 'x7' (item 2, at byte 6) is not a non-negative token id"));
  EXPECT_THAT(test::error_of([] { parse_token_id_list("-1", "f"); }), HasSubstr("'-1'"));
  EXPECT_THAT(test::error_of([] { parse_token_id_list("2147483648", "f"); }), HasSubstr("'2147483648'"));
  EXPECT_THAT(test::error_of([] { parse_token_id_list(" \n,", "f"); }), HasSubstr("f: no token ids"));
}

}  // namespace
}  // namespace fg::cli
