// tests/runner_sampling_support.h — what the CPU and the CUDA runner sampling tests share: bit
// comparison of logprob results, and a random mix of sampling settings.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runner/model_runner.h"

namespace fg::test {

inline bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

// Bit-identical logprob entries, NaN included.
inline void expect_same_logprobs(const std::vector<TokenLogprobs>& a, const std::vector<TokenLogprobs>& b,
                                 const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t r = 0; r < a.size(); ++r) {
    EXPECT_TRUE(same_bits(a[r].logprob, b[r].logprob)) << what << " request " << r << ": " << a[r].logprob << " vs "
                                                       << b[r].logprob;
    ASSERT_EQ(a[r].top.size(), b[r].top.size()) << what << " request " << r;
    for (size_t k = 0; k < a[r].top.size(); ++k) {
      EXPECT_EQ(a[r].top[k].first, b[r].top[k].first) << what << " request " << r << " rank " << k;
      EXPECT_TRUE(same_bits(a[r].top[k].second, b[r].top[k].second)) << what << " request " << r << " rank " << k;
    }
  }
}

// A mix of sampling settings: greedy and sampled, with and without penalties and logprobs.
inline SamplingParams mixed_params(std::mt19937& rng) {
  std::uniform_int_distribution<int> pick(0, 99);
  SamplingParams p;
  if (pick(rng) < 60) {
    p.temperature = 0.5f + static_cast<float>(pick(rng)) / 100.0f;
    p.top_k = pick(rng) < 50 ? 0 : 20;
    p.top_p = pick(rng) < 50 ? 1.0f : 0.9f;
  }
  p.seed = static_cast<int64_t>(rng());
  p.step = rng() % 100;
  const int k = pick(rng);
  if (k < 30) p.repetition_penalty = 1.0f + static_cast<float>(pick(rng)) / 50.0f;
  if (k >= 20 && k < 50) p.presence_penalty = static_cast<float>(pick(rng)) / 25.0f - 2.0f;
  if (k >= 40 && k < 70) p.frequency_penalty = static_cast<float>(pick(rng)) / 25.0f - 2.0f;
  const int32_t counts[] = {-1, -1, 0, 1, 5, kMaxLogprobs};
  p.num_logprobs = counts[pick(rng) % 6];
  return p;
}

}  // namespace fg::test
