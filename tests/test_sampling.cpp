// tests/test_sampling.cpp — the CPU reference sampler against its definition (sampling_params.h):
// Philox known answers, the deterministic exp/log, greedy tie-breaking, the exact sets kept by
// top-k / top-p / min-p and their order, the empirical distribution of draws, independence from the
// row index and the batch, and parameter validation.
//
// Distribution checks: N = 20000 draws (steps 0..N-1 of one seed) of a row whose kept set has K
// tokens with renormalised probabilities p_i (computed here in double from the logits, not by the
// sampler). Under the null hypothesis Pearson's X^2 = sum (n_i - N p_i)^2 / (N p_i) follows
// chi-square with d = K - 1 degrees of freedom (every N p_i is >= 200 here, far above the usual
// 5 needed for the approximation). The Laurent-Massart inequality gives, for any x > 0,
// P(X^2 >= d + 2 sqrt(d x) + 2x) <= e^-x; x = 15 makes a false alarm as unlikely as a 5-sigma
// normal event (e^-15 = 3.1e-7), so the bound d + 2 sqrt(15 d) + 30 is used. The draws are a fixed
// function of (seed, step), so a test either always passes or always fails; the bound says how
// unlikely a wrong verdict would be for a correct sampler. A probability off by 10% of 0.25 moves
// X^2 by ~50 at N = 20000, well past the bound for the K used here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "sampling/cpu_sampler.h"
#include "sampling/philox.h"
#include "sampling/sampling_math.h"
#include "sampling/sampling_params.h"

namespace fg {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr float kInf = std::numeric_limits<float>::infinity();

// Samples every row of `logits` ([rows, vocab]) with its parameters.
std::vector<int32_t> sample(const std::vector<float>& logits, int64_t vocab, const std::vector<SamplingParams>& params,
                            ThreadPool* pool = nullptr, std::vector<float>* logprobs = nullptr) {
  const int64_t rows = static_cast<int64_t>(params.size());
  HostSamplingBuffers buffers(rows);
  for (int64_t r = 0; r < rows; ++r) buffers.set(r, params[r]);
  std::vector<int32_t> ids(static_cast<size_t>(rows), -7);
  Tensor logits_t(const_cast<float*>(logits.data()), DType::kF32, {rows, vocab});
  Tensor ids_t(ids.data(), DType::kI32, {rows});
  Tensor lp_t;
  if (logprobs) {
    logprobs->assign(static_cast<size_t>(rows), 0.0f);
    lp_t = Tensor(logprobs->data(), DType::kF32, {rows});
  }
  sample_cpu(logits_t, buffers.tensors(), ids_t, pool, lp_t);
  return ids;
}

// N draws of one row: steps 0..n-1 of one seed.
std::vector<int32_t> draws(const std::vector<float>& row, SamplingParams p, int n) {
  std::vector<float> logits;
  std::vector<SamplingParams> params;
  for (int i = 0; i < n; ++i) {
    logits.insert(logits.end(), row.begin(), row.end());
    p.step = i;
    params.push_back(p);
  }
  return sample(logits, static_cast<int64_t>(row.size()), params);
}

// The renormalised distribution of a kept set, in double, from the logits alone.
std::vector<double> expected_probs(const std::vector<float>& row, float temperature, const std::set<int>& kept) {
  double max_scaled = -1e300;
  for (int i : kept) max_scaled = std::max(max_scaled, static_cast<double>(row[i]) / temperature);
  std::vector<double> p(row.size(), 0.0);
  double total = 0.0;
  for (int i : kept) total += p[i] = std::exp(static_cast<double>(row[i]) / temperature - max_scaled);
  for (double& v : p) v /= total;
  return p;
}

// No draw outside the support of `probs`, and Pearson's X^2 under the bound derived at the top.
void expect_distribution(const std::vector<int32_t>& tokens, const std::vector<double>& probs) {
  std::vector<double> counts(probs.size(), 0.0);
  for (int32_t t : tokens) {
    ASSERT_GE(t, 0);
    ASSERT_LT(t, static_cast<int32_t>(probs.size()));
    ASSERT_GT(probs[t], 0.0) << "token " << t << " is outside the kept set";
    counts[t] += 1.0;
  }
  const double n = static_cast<double>(tokens.size());
  double x2 = 0.0;
  int support = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] <= 0.0) continue;
    ++support;
    const double expect = n * probs[i];
    x2 += (counts[i] - expect) * (counts[i] - expect) / expect;
  }
  const double d = support - 1;
  const double bound = d + 2.0 * std::sqrt(15.0 * d) + 30.0;
  EXPECT_LT(x2, bound) << "chi-square " << x2 << " with " << d << " degrees of freedom";
}

std::vector<float> log_probs(const std::vector<double>& probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
  return out;
}

SamplingParams sampled(float temperature, uint64_t seed = 1234) {
  SamplingParams p;
  p.temperature = temperature;
  p.seed = static_cast<int64_t>(seed);
  return p;
}

constexpr int kDraws = 20000;

// --- Philox and the shared arithmetic ------------------------------------------------------------

// Random123's tests/kat_vectors (DEShawResearch/random123), the three "philox4x32 10" lines:
// counter (4 words), key (2 words) -> output (4 words).
TEST(SamplingPhilox, KnownAnswerVectors) {
  struct Kat {
    sampling::Philox4x32 ctr;
    uint32_t key0, key1;
    sampling::Philox4x32 out;
  };
  const Kat kats[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}}},
      {{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}},
       0xffffffffu,
       0xffffffffu,
       {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}}},
      {{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
       0xa4093822u,
       0x299f31d0u,
       {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}}},
  };
  for (const Kat& k : kats) {
    const sampling::Philox4x32 out = sampling::philox4x32_10(k.ctr, k.key0, k.key1);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out.v[i], k.out.v[i]) << "word " << i;
  }
}

TEST(SamplingPhilox, RandomBitsDependOnSeedAndStep) {
  std::set<uint64_t> seen;
  for (uint64_t seed = 0; seed < 64; ++seed)
    for (uint64_t step = 0; step < 64; ++step) seen.insert(sampling::sampling_random_bits(seed, step));
  EXPECT_EQ(seen.size(), 64u * 64u);
  EXPECT_EQ(sampling::sampling_random_bits(7, 9), sampling::sampling_random_bits(7, 9));
  // The high words of seed and step reach the key and counter.
  EXPECT_NE(sampling::sampling_random_bits(1, 0), sampling::sampling_random_bits(1 + (uint64_t{1} << 32), 0));
  EXPECT_NE(sampling::sampling_random_bits(1, 0), sampling::sampling_random_bits(1, uint64_t{1} << 32));
}

TEST(SamplingMath, ExpMatchesLibmWithinFourUlp) {
  EXPECT_EQ(sampling::exp_det(0.0f), 1.0f);
  EXPECT_EQ(sampling::exp_det(-0.0f), 1.0f);
  EXPECT_EQ(sampling::exp_det(-kInf), 0.0f);
  EXPECT_EQ(sampling::exp_det(-81.0f), 0.0f);
  EXPECT_TRUE(std::isnan(sampling::exp_det(std::nanf(""))));
  double worst = 0.0;
  for (float x = -80.0f; x <= 88.0f; x += 0.00173f) {
    const double ref = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::fabs(sampling::exp_det(x) - ref) / ref);
  }
  EXPECT_LT(worst, 4.0 * 5.96e-8) << "worst relative error " << worst;
}

TEST(SamplingMath, LogMatchesLibmWithinFourUlp) {
  EXPECT_EQ(sampling::log_det(1.0f), 0.0f);
  EXPECT_EQ(sampling::log_det(0.0f), -kInf);
  EXPECT_TRUE(std::isnan(sampling::log_det(-1.0f)));
  double worst = 0.0;
  for (float x = 1e-38f; x < 3e38f; x *= 1.000917f) {
    const double ref = std::log(static_cast<double>(x));
    if (ref == 0.0) continue;
    worst = std::max(worst, std::fabs(sampling::log_det(x) - ref) / std::fabs(ref));
  }
  for (float x = 0.5f; x < 2.0f; x += 1.3e-5f) {
    const double ref = std::log(static_cast<double>(x));
    if (ref == 0.0) continue;
    worst = std::max(worst, std::fabs(sampling::log_det(x) - ref) / std::fabs(ref));
  }
  EXPECT_LT(worst, 4.0 * 5.96e-8) << "worst relative error " << worst;
  const float subnormal = 1e-42f;
  EXPECT_NEAR(sampling::log_det(subnormal), std::log(static_cast<double>(subnormal)), 1e-5);
}

TEST(SamplingMath, FixedPointKeysAndDraws) {
  EXPECT_EQ(sampling::fixed_weight(1.0f), sampling::kUnitWeight);
  EXPECT_EQ(sampling::fixed_weight(0.5f), sampling::kUnitWeight / 2);
  EXPECT_EQ(sampling::fixed_weight(0.0f), 0u);
  EXPECT_EQ(sampling::fixed_weight(std::nanf("")), 0u);
  EXPECT_EQ(sampling::fixed_weight(std::ldexp(1.0f, -40)), 1u);
  EXPECT_EQ(sampling::fixed_weight(std::ldexp(1.0f, -41)), 0u);

  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 100.0f);
  std::vector<float> values = {-kInf, kInf, 0.0f, 1e-40f, -1e-40f};
  for (int i = 0; i < 1000; ++i) values.push_back(dist(rng));
  for (float a : values)
    for (float b : {values[0], values[2], values[7], values[100]}) {
      EXPECT_EQ(a < b, sampling::float_key(a) < sampling::float_key(b)) << a << " " << b;
      EXPECT_EQ(sampling::key_float(sampling::float_key(a)), a);
    }

  EXPECT_EQ(sampling::top_p_target(0.5f, 10), 5u);
  EXPECT_EQ(sampling::top_p_target(0.51f, 10), 6u);
  EXPECT_EQ(sampling::top_p_target(1e-30f, 10), 1u);
  EXPECT_EQ(sampling::top_p_target(1.0f, ~uint64_t{0} >> 1), ~uint64_t{0} >> 1);
  EXPECT_EQ(sampling::draw_below(uint64_t{1} << 63, 10), 5u);
  EXPECT_EQ(sampling::draw_below(~uint64_t{0}, 10), 9u);
  EXPECT_EQ(sampling::draw_below(0, 10), 0u);
}

// --- greedy ----------------------------------------------------------------------------------------

TEST(SamplingGreedy, TiesGoToTheLowestId) {
  const std::vector<float> logits = {1,
                                     3,
                                     2,
                                     3,
                                     3,  // row 0: max 3 at 1, 3, 4
                                     -kInf,
                                     -kInf,
                                     -kInf,
                                     -kInf,
                                     -kInf,  // row 1: all masked
                                     std::nanf(""),
                                     0.5f,
                                     0.5f,
                                     -kInf,
                                     0.25f,  // row 2: NaN first
                                     0,
                                     0,
                                     0,
                                     0,
                                     7};
  SamplingParams greedy;
  greedy.top_k = 1;  // filters are ignored at temperature 0
  greedy.top_p = 0.1f;
  greedy.min_p = 0.9f;
  EXPECT_EQ(sample(logits, 5, {greedy, greedy, greedy, greedy}), (std::vector<int32_t>{1, 0, 1, 4}));
}

TEST(SamplingGreedy, NeutralRowsAreGreedy) {
  HostSamplingBuffers buffers(3);
  for (int r = 0; r < 3; ++r) {
    const SamplingParams p = buffers.get(r);
    EXPECT_EQ(p.temperature, 0.0f);
    EXPECT_EQ(p.top_k, 0);
    EXPECT_EQ(p.top_p, 1.0f);
    EXPECT_EQ(p.min_p, 0.0f);
  }
  std::vector<float> logits = {0, 9, 1, 5, 5, 2};
  std::vector<int32_t> ids(2, -1);
  sample_cpu(Tensor(logits.data(), DType::kF32, {2, 3}), buffers.tensors(), Tensor(ids.data(), DType::kI32, {2}),
             nullptr);
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 0}));
}

TEST(SamplingTemperature, LowTemperatureTendsToGreedy) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> row(1000);
  for (float& v : row) v = dist(rng);
  const int argmax = static_cast<int>(std::max_element(row.begin(), row.end()) - row.begin());
  // The gap to the runner-up divided by T is > 25 nats here, so no other token has any mass.
  for (float t : {1e-3f, kMinSamplingTemperature}) {
    for (int32_t token : draws(row, sampled(t), 300)) EXPECT_EQ(token, argmax) << "temperature " << t;
  }
  // And the probability of the argmax grows as T falls.
  double previous = 0.0;
  for (float t : {4.0f, 1.0f, 0.25f, 0.05f}) {
    const std::vector<int32_t> d = draws(row, sampled(t), 2000);
    const double share = std::count(d.begin(), d.end(), argmax) / 2000.0;
    EXPECT_GT(share, previous) << "temperature " << t;
    previous = share;
  }
}

// --- the filters keep exactly the documented sets ------------------------------------------------

TEST(SamplingFilters, PlainTemperatureFollowsTheSoftmax) {
  const std::vector<float> row = {0.5f, -1.0f, 2.0f, 0.0f, 1.0f, -0.5f, 1.5f, 0.25f};
  const std::set<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
  expect_distribution(draws(row, sampled(0.7f), kDraws), expected_probs(row, 0.7f, all));
  expect_distribution(draws(row, sampled(1.0f, 99), kDraws), expected_probs(row, 1.0f, all));
}

TEST(SamplingFilters, TopKKeepsTheKLargest) {
  const std::vector<float> row = {0.1f, 2.0f, -1.0f, 1.5f, 0.7f, 3.0f, -2.0f, 0.9f, 1.0f, -0.3f};
  SamplingParams p = sampled(1.0f);
  p.top_k = 4;  // 3.0 (5), 2.0 (1), 1.5 (3), 1.0 (8)
  expect_distribution(draws(row, p, kDraws), expected_probs(row, 1.0f, {5, 1, 3, 8}));
  p.top_k = 1;
  for (int32_t t : draws(row, p, 200)) EXPECT_EQ(t, 5);
  p.top_k = 10;  // == vocab: off
  expect_distribution(draws(row, p, kDraws), expected_probs(row, 1.0f, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(SamplingFilters, TopKKeepsTiesAtTheKthValue) {
  const std::vector<float> row = {1.0f, 5.0f, 4.0f, 3.0f, 3.0f, 3.0f, 0.0f};
  SamplingParams p = sampled(1.0f, 77);
  p.top_k = 3;  // 5, 4, then 3 three times: all three kept
  expect_distribution(draws(row, p, kDraws), expected_probs(row, 1.0f, {1, 2, 3, 4, 5}));
}

TEST(SamplingFilters, TopPKeepsTheSmallestSetReachingP) {
  const std::vector<float> row = log_probs({0.4, 0.3, 0.15, 0.1, 0.05});
  SamplingParams p = sampled(1.0f, 5);
  p.top_p = 0.8f;  // 0.4 + 0.3 = 0.7 < 0.8 <= 0.85
  expect_distribution(draws(row, p, kDraws), expected_probs(row, 1.0f, {0, 1, 2}));
  p.top_p = 0.3f;  // the most likely token alone
  for (int32_t t : draws(row, p, 200)) EXPECT_EQ(t, 0);
  p.top_p = 0.96f;  // needs all five
  expect_distribution(draws(row, p, kDraws), expected_probs(row, 1.0f, {0, 1, 2, 3, 4}));
}

TEST(SamplingFilters, TopPKeepsTiesWithTheLeastLikelyMember) {
  // p ~ e^2, e, e, e, 1: p_0 = 0.447; reaching 0.5 needs one e, and its two ties come along.
  const std::vector<float> row = {2.0f, 1.0f, 1.0f, 1.0f, 0.0f};
  SamplingParams p = sampled(1.0f, 8);
  p.top_p = 0.5f;
  expect_distribution(draws(row, p, kDraws), expected_probs(row, 1.0f, {0, 1, 2, 3}));
  p.top_p = 0.4f;
  for (int32_t t : draws(row, p, 200)) EXPECT_EQ(t, 0);
}

TEST(SamplingFilters, MinPKeepsTokensAtLeastMinPTimesTheMax) {
  const std::vector<float> row = {-1.0f, 0.0f, -0.5f, -2.0f, -3.0f};
  SamplingParams p = sampled(1.0f, 3);
  p.min_p = 0.3f;  // e^-1 = 0.37 kept, e^-2 = 0.14 dropped
  expect_distribution(draws(row, p, kDraws), expected_probs(row, 1.0f, {0, 1, 2}));
  // Temperature first: at T = 2 the ratios are e^-0.5, e^-1, e^-1.5 = 0.22.
  p.temperature = 2.0f;
  expect_distribution(draws(row, p, kDraws), expected_probs(row, 2.0f, {0, 1, 2, 3}));
}

TEST(SamplingFilters, OrderIsMinPThenTopKThenTopP) {
  // min-p before top-p (vLLM v1): p = .5 .25 .15 .1, min_p .25 keeps p >= .125 = {0, 1, 2}; over
  // those the renormalised p are .556 .278 .167, and top_p .8 stops after two. Applying top-p
  // first (vLLM v0) would keep {0, 1, 2}.
  const std::vector<float> row = log_probs({0.5, 0.25, 0.15, 0.1});
  SamplingParams p = sampled(1.0f, 21);
  p.min_p = 0.25f;
  p.top_p = 0.8f;
  expect_distribution(draws(row, p, kDraws), expected_probs(row, 1.0f, {0, 1}));
  // top-k before top-p: top_k 2 leaves .667 .333, so top_p .6 keeps token 0 alone (top-p first
  // would keep {0, 1}).
  p.min_p = 0.0f;
  p.top_k = 2;
  p.top_p = 0.6f;
  for (int32_t t : draws(row, p, 300)) EXPECT_EQ(t, 0);
}

TEST(SamplingFilters, MaskedTokensAreNeverDrawn) {
  std::vector<float> row(64, 0.0f);
  for (int i = 0; i < 64; i += 2) row[i] = -kInf;
  for (int32_t t : draws(row, sampled(1.0f), 2000)) EXPECT_EQ(t % 2, 1);
  // All masked: the greedy id.
  const std::vector<float> masked(8, -kInf);
  for (int32_t t : draws(masked, sampled(1.0f), 10)) EXPECT_EQ(t, 0);
}

// --- batch independence and the random stream ---------------------------------------------------

SamplingParams random_params(std::mt19937& rng, int64_t vocab) {
  SamplingParams p;
  std::uniform_int_distribution<int> pick(0, 99);
  if (pick(rng) < 20) return p;  // neutral
  p.temperature = 0.3f + static_cast<float>(pick(rng)) / 80.0f;
  const int k = pick(rng);
  p.top_k = k < 40 ? 0 : k < 60 ? 1 + k % 7 : k < 80 ? 40 : static_cast<int32_t>(vocab);
  const int q = pick(rng);
  p.top_p = q < 40 ? 1.0f : q < 70 ? 0.9f : 0.5f + static_cast<float>(q) / 300.0f;
  const int m = pick(rng);
  p.min_p = m < 60 ? 0.0f : m < 80 ? 0.05f : 0.2f;
  p.seed = static_cast<int64_t>(rng()) << 20 ^ rng();
  p.step = rng() % 1000;
  return p;
}

TEST(SamplingBatch, ResultDependsOnlyOnTheRow) {
  constexpr int64_t kVocab = 500, kRows = 64;
  std::mt19937 rng(2024);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> logits(kRows * kVocab);
  for (float& v : logits) v = dist(rng);
  std::vector<SamplingParams> params;
  for (int r = 0; r < kRows; ++r) params.push_back(random_params(rng, kVocab));

  const std::vector<int32_t> batch = sample(logits, kVocab, params);
  ThreadPool pool(4);
  EXPECT_EQ(sample(logits, kVocab, params, &pool), batch);
  // Each row alone, and the rows in reverse order.
  std::vector<float> reversed_logits;
  std::vector<SamplingParams> reversed_params;
  for (int64_t r = kRows - 1; r >= 0; --r) {
    const std::vector<float> row(logits.begin() + r * kVocab, logits.begin() + (r + 1) * kVocab);
    EXPECT_EQ(sample(row, kVocab, {params[r]}), std::vector<int32_t>{batch[r]}) << "row " << r;
    reversed_logits.insert(reversed_logits.end(), row.begin(), row.end());
    reversed_params.push_back(params[r]);
  }
  std::vector<int32_t> reversed = sample(reversed_logits, kVocab, reversed_params, &pool);
  std::reverse(reversed.begin(), reversed.end());
  EXPECT_EQ(reversed, batch);
}

TEST(SamplingBatch, SeedsAndStepsChangeTheDraw) {
  const std::vector<float> flat(1000, 0.0f);
  // 200 draws from 1000 equally likely tokens give ~181 distinct values (sd ~4).
  std::vector<float> logits;
  std::vector<SamplingParams> by_seed, by_step;
  for (int i = 0; i < 200; ++i) {
    logits.insert(logits.end(), flat.begin(), flat.end());
    SamplingParams p = sampled(1.0f, 1000 + static_cast<uint64_t>(i));
    by_seed.push_back(p);
    p.seed = 42;
    p.step = i;
    by_step.push_back(p);
  }
  const std::vector<int32_t> a = sample(logits, 1000, by_seed), b = sample(logits, 1000, by_step);
  EXPECT_GT(std::set<int32_t>(a.begin(), a.end()).size(), 160u);
  EXPECT_GT(std::set<int32_t>(b.begin(), b.end()).size(), 160u);
  EXPECT_EQ(sample(flat, 1000, {by_seed[3]}), std::vector<int32_t>{a[3]});
}

// --- logprobs ---------------------------------------------------------------------------------------

TEST(SamplingLogprob, IsTheRawLogSoftmaxOfTheChosenToken) {
  constexpr int64_t kVocab = 3000, kRows = 40;
  std::mt19937 rng(9);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> logits(kRows * kVocab);
  for (float& v : logits) v = dist(rng);
  std::vector<SamplingParams> params;
  for (int r = 0; r < kRows; ++r) params.push_back(random_params(rng, kVocab));
  std::vector<float> logprobs;
  const std::vector<int32_t> ids = sample(logits, kVocab, params, nullptr, &logprobs);
  for (int64_t r = 0; r < kRows; ++r) {
    const float* row = logits.data() + r * kVocab;
    const double max = *std::max_element(row, row + kVocab);
    double z = 0.0;
    for (int64_t i = 0; i < kVocab; ++i) z += std::exp(row[i] - max);
    const double expect = row[ids[r]] - max - std::log(z);
    EXPECT_NEAR(logprobs[r], expect, 2e-6 * std::max(1.0, std::fabs(expect))) << "row " << r;
  }
}

// --- validation ---------------------------------------------------------------------------------

std::string validation_error(const SamplingParams& bad, int64_t row) {
  HostSamplingBuffers buffers(5);
  buffers.set(row, bad);
  try {
    validate_sampling_params(buffers.tensors(), 5);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SamplingValidation, NamesTheFieldAndTheRow) {
  SamplingParams p = sampled(1.0f);
  p.top_p = 1.5f;
  EXPECT_THAT(validation_error(p, 3), AllOf(HasSubstr("top_p"), HasSubstr("row 3")));
  p = sampled(1.0f);
  p.top_p = 0.0f;
  EXPECT_THAT(validation_error(p, 1), AllOf(HasSubstr("top_p"), HasSubstr("row 1")));
  p = sampled(1e-7f);
  EXPECT_THAT(validation_error(p, 2), AllOf(HasSubstr("temperature"), HasSubstr("row 2")));
  p = sampled(std::nanf(""));
  EXPECT_THAT(validation_error(p, 0), AllOf(HasSubstr("temperature"), HasSubstr("row 0")));
  p = sampled(1.0f);
  p.top_k = -1;
  EXPECT_THAT(validation_error(p, 4), AllOf(HasSubstr("top_k"), HasSubstr("row 4")));
  p = sampled(1.0f);
  p.min_p = 1.01f;
  EXPECT_THAT(validation_error(p, 2), AllOf(HasSubstr("min_p"), HasSubstr("row 2")));
  p = sampled(1.0f);
  p.step = -1;
  EXPECT_THAT(validation_error(p, 3), AllOf(HasSubstr("step"), HasSubstr("row 3")));
  EXPECT_EQ(validation_error(sampled(1.0f), 3), "");
}

TEST(SamplingValidation, ChecksShapesNamingTheTensor) {
  HostSamplingBuffers buffers(2);
  std::vector<float> logits(3 * 4, 0.0f);
  std::vector<int32_t> ids(3);
  auto error = [&](const Tensor& out) {
    try {
      sample_cpu(Tensor(logits.data(), DType::kF32, {3, 4}), buffers.tensors(), out, nullptr);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // The parameter tensors have 2 rows, the logits 3.
  EXPECT_THAT(error(Tensor(ids.data(), DType::kI32, {3})), AllOf(HasSubstr("temperature"), HasSubstr("3")));
  HostSamplingBuffers enough(3);
  try {
    sample_cpu(Tensor(logits.data(), DType::kF32, {3, 4}), enough.tensors(), Tensor(ids.data(), DType::kI32, {2}),
               nullptr);
    ADD_FAILURE() << "a wrong out_ids shape was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("out_ids"));
  }
}

}  // namespace
}  // namespace fg
