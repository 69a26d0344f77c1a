// tests/test_penalties.cpp — repetition / presence / frequency penalties and logprobs on the CPU
// reference (sampling/cpu_penalties.h, cpu_logprobs.h) against their definition (items 0 and 4 of
// sampling_params.h), the staging of penalty lists and checked mode's rules for them.
//
// Penalties are compared with a direct scalar re-implementation of vLLM's formulas over dense
// masks and counts (vllm/model_executor/layers/utils.py apply_penalties with the CUDA op of
// apply_repetition_penalties): float for float, so the results must be equal (==; a -0 from vLLM's
// subtraction of zeros compares equal to +0).
//
// Logprob tolerance, derived: the reference is the log-softmax in double of the same float logits.
// The fp32 value is (L_t - L_max) - log_det(Z * 2^-40): the difference is exact up to one rounding
// (2^-24 relative of the result); Z's terms carry exp_det's error (< 4 ulp = 2.4e-7 relative,
// tests/test_sampling.cpp) and a truncation of < 2^-40 each (< V 2^-40 <= 3e-9 here, relative to
// Z * 2^-40 >= 1), and Z's rounding to float adds 2^-24: log(Z) is off by < 4e-7 absolute, and
// log_det adds < 2.4e-7 * |log Z|. So |got - ref| <= 4e-7 * (1 + |log Z|) + 1.2e-7 * |ref| bounds
// it with margin (2^-24 = 6e-8; the final subtraction's rounding is the second term).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "runner/input_check.h"
#include "runner/step_builder.h"
#include "sampling/cpu_logprobs.h"
#include "sampling/cpu_penalties.h"
#include "sampling/cpu_sampler.h"
#include "sampling/sampling_math.h"
#include "sampling/sampling_params.h"
#include "penalty_reference.h"
#include "test_support.h"

namespace fg {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using test::History;
using test::random_history;
using test::random_logits;
using test::random_penalties;
using test::vllm_penalized;

constexpr float kInf = std::numeric_limits<float>::infinity();

// Penalty lists of a batch, built by the runner's builder (only requests with penalties).
struct Lists {
  std::vector<int32_t> offsets;   // [rows + 1]
  std::vector<int32_t> entries;   // [capacity, 2]
  std::vector<float> original;    // [capacity]

  Lists(const std::vector<History>& history, const std::vector<SamplingParams>& params, int64_t capacity = 0) {
    PenaltyListBuilder builder;
    offsets.push_back(0);
    std::vector<int32_t> used;
    for (size_t r = 0; r < history.size(); ++r) {
      if (params[r].has_penalties()) {
        const int64_t n = builder.collect(history[r].prompt, history[r].output,
                                          params[r].repetition_penalty != 1.0f, static_cast<int64_t>(r));
        const size_t at = used.size();
        used.resize(at + 2 * static_cast<size_t>(n));
        builder.write(used.data() + at);
      }
      offsets.push_back(static_cast<int32_t>(used.size() / 2));
    }
    const int64_t cap = std::max<int64_t>(capacity, static_cast<int64_t>(used.size() / 2));
    entries.assign(static_cast<size_t>(2 * cap), -7);
    std::copy(used.begin(), used.end(), entries.begin());
    original.assign(static_cast<size_t>(cap), std::nanf(""));
  }

  PenaltyTensors tensors() {
    const int64_t cap = static_cast<int64_t>(original.size());
    return {Tensor(offsets.data(), DType::kI32, {static_cast<int64_t>(offsets.size())}),
            Tensor(entries.data(), DType::kI32, {cap, 2}), Tensor(original.data(), DType::kF32, {cap}), Tensor()};
  }
};

// Host logprob outputs, poisoned (NaN / -1) so that unwritten entries show.
struct Logprobs {
  std::vector<float> logit_max, top_logprobs, sampled;
  std::vector<int64_t> mass;
  std::vector<int32_t> top_ids;

  explicit Logprobs(int64_t rows)
      : logit_max(rows, std::nanf("")),
        top_logprobs(rows * kMaxLogprobs, std::nanf("")),
        sampled(rows, std::nanf("")),
        mass(rows, -1),
        top_ids(rows * kMaxLogprobs, -1) {}

  LogprobTensors tensors() {
    const int64_t rows = static_cast<int64_t>(logit_max.size());
    LogprobTensors t;
    t.logit_max = Tensor(logit_max.data(), DType::kF32, {rows});
    t.mass = Tensor(mass.data(), DType::kI64, {rows});
    t.top_ids = Tensor(top_ids.data(), DType::kI32, {rows, kMaxLogprobs});
    t.top_logprobs = Tensor(top_logprobs.data(), DType::kF32, {rows, kMaxLogprobs});
    t.sampled = Tensor(sampled.data(), DType::kF32, {rows});
    return t;
  }
};

std::unique_ptr<HostSamplingBuffers> buffers_of(const std::vector<SamplingParams>& params) {
  auto b = std::make_unique<HostSamplingBuffers>(static_cast<int64_t>(params.size()));
  for (size_t r = 0; r < params.size(); ++r) b->set(static_cast<int64_t>(r), params[r]);
  return b;
}

using test::error_of;

// --- penalties ----------------------------------------------------------------------------------

TEST(Penalties, MatchVllmFormulasOnRandomLogits) {
  constexpr int64_t kVocab = 1000, kRows = 40;
  std::mt19937 rng(31);
  std::vector<float> logits = random_logits(kRows, kVocab, rng);
  const std::vector<float> raw = logits;
  std::vector<History> history;
  std::vector<SamplingParams> params;
  for (int64_t r = 0; r < kRows; ++r) {
    history.push_back(random_history(kVocab, rng));
    params.push_back(r % 5 == 4 ? SamplingParams{} : random_penalties(rng));  // some rows off
  }
  Lists lists(history, params, 20000);
  auto host = buffers_of(params);
  ThreadPool pool(3);
  apply_penalties_cpu(Tensor(logits.data(), DType::kF32, {kRows, kVocab}), host->tensors(), lists.tensors(), &pool);

  int64_t changed = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    const std::vector<float> want = vllm_penalized(raw.data() + r * kVocab, kVocab, history[r], params[r]);
    for (int64_t i = 0; i < kVocab; ++i) {
      ASSERT_EQ(logits[r * kVocab + i], want[i]) << "row " << r << " token " << i;
      changed += logits[r * kVocab + i] != raw[r * kVocab + i];
    }
    if (!params[r].has_penalties()) {
      EXPECT_EQ(lists.offsets[r], lists.offsets[r + 1]) << "row " << r;
    }
    for (int32_t e = lists.offsets[r]; e < lists.offsets[r + 1]; ++e) {
      const float before = raw[r * kVocab + lists.entries[2 * e]];
      EXPECT_EQ(std::memcmp(&lists.original[e], &before, 4), 0) << "the raw logit of entry " << e;
    }
  }
  EXPECT_GT(changed, 1000);  // the test exercised the formulas
}

TEST(Penalties, RepetitionCoversPromptAndOutputOthersTheOutputOnly) {
  // Tokens: 0 prompt only, 1 output only (twice), 2 both, 3 neither.
  const History h{{0, 2, 0}, {1, 2, 1}};
  const std::vector<float> raw = {2.0f, 2.0f, -2.0f, 2.0f};
  auto penalized = [&](SamplingParams p) {
    std::vector<float> logits = raw;
    Lists lists({h}, {p});
    auto host = buffers_of({p});
    apply_penalties_cpu(Tensor(logits.data(), DType::kF32, {1, 4}), host->tensors(), lists.tensors(), nullptr);
    return logits;
  };
  SamplingParams rep;
  rep.repetition_penalty = 2.0f;
  EXPECT_EQ(penalized(rep), (std::vector<float>{1.0f, 1.0f, -4.0f, 2.0f}));  // divide positives, multiply others
  SamplingParams freq;
  freq.frequency_penalty = 0.5f;
  EXPECT_EQ(penalized(freq), (std::vector<float>{2.0f, 1.0f, -2.5f, 2.0f}));  // 0.5 per occurrence in the output
  SamplingParams pres;
  pres.presence_penalty = -1.5f;
  EXPECT_EQ(penalized(pres), (std::vector<float>{2.0f, 3.5f, -0.5f, 2.0f}));  // once per token of the output
  SamplingParams all;
  all.repetition_penalty = 2.0f;
  all.frequency_penalty = 0.5f;
  all.presence_penalty = 0.25f;
  EXPECT_EQ(penalized(all), (std::vector<float>{1.0f, -0.25f, -4.75f, 2.0f}));  // repetition first
}

TEST(Penalties, GreedyIsTheArgmaxOfThePenalizedLogits) {
  constexpr int64_t kVocab = 300, kRows = 16;
  std::mt19937 rng(8);
  std::vector<float> logits = random_logits(kRows, kVocab, rng);
  std::vector<History> history;
  std::vector<SamplingParams> params;
  int64_t moved = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    const float* row = logits.data() + r * kVocab;
    const int32_t argmax = static_cast<int32_t>(std::max_element(row, row + kVocab) - row);
    History h = random_history(kVocab, rng);
    h.output.push_back(argmax);  // the raw argmax is penalized
    history.push_back(h);
    SamplingParams p;
    p.repetition_penalty = 1.5f + static_cast<float>(r) * 0.1f;
    p.presence_penalty = 2.0f;
    params.push_back(p);
  }
  Lists lists(history, params);
  auto host = buffers_of(params);
  std::vector<float> want(logits.size());
  for (int64_t r = 0; r < kRows; ++r) {
    const std::vector<float> row = vllm_penalized(logits.data() + r * kVocab, kVocab, history[r], params[r]);
    std::copy(row.begin(), row.end(), want.begin() + r * kVocab);
  }
  const Tensor t(logits.data(), DType::kF32, {kRows, kVocab});
  const std::vector<float> raw = logits;
  apply_penalties_cpu(t, host->tensors(), lists.tensors(), nullptr);
  std::vector<int32_t> ids(kRows, -1);
  sample_cpu(t, host->tensors(), Tensor(ids.data(), DType::kI32, {kRows}), nullptr);
  for (int64_t r = 0; r < kRows; ++r) {
    const float* row = want.data() + r * kVocab;
    const int32_t expect = static_cast<int32_t>(std::max_element(row, row + kVocab) - row);  // lowest id of the max
    EXPECT_EQ(ids[r], expect) << "row " << r;
    const float* raw_row = raw.data() + r * kVocab;
    moved += ids[r] != std::max_element(raw_row, raw_row + kVocab) - raw_row;
  }
  EXPECT_GT(moved, kRows / 2);
}

TEST(Penalties, BadListsFailNamingTheEntry) {
  std::vector<float> logits(2 * 10, 0.0f);
  SamplingParams p;
  p.presence_penalty = 1.0f;
  auto host = buffers_of({p, p});
  const Tensor t(logits.data(), DType::kF32, {2, 10});
  std::vector<float> original(4);
  auto run = [&](std::vector<int32_t> offsets, std::vector<int32_t> entries) {
    PenaltyTensors lists{Tensor(offsets.data(), DType::kI32, {3}), Tensor(entries.data(), DType::kI32, {4, 2}),
                         Tensor(original.data(), DType::kF32, {4}), Tensor()};
    return error_of([&] { apply_penalties_cpu(t, host->tensors(), lists, nullptr); });
  };
  EXPECT_THAT(run({0, 2, 1}, {1, 1, 2, 1, 3, 1, 4, 1}), HasSubstr("penalty offsets[2] = 1"));
  EXPECT_THAT(run({0, 2, 5}, {1, 1, 2, 1, 3, 1, 4, 1}), HasSubstr("penalty offsets[2] = 5"));
  EXPECT_THAT(run({0, 2, 3}, {1, 1, 2, 1, 10, 1, 4, 1}), AllOf(HasSubstr("entry 2 of row 1"), HasSubstr("token 10")));
  EXPECT_THAT(run({0, 2, 3}, {1, 1, 2, -1, 3, 1, 4, 1}), AllOf(HasSubstr("entry 1 of row 0"), HasSubstr("count -1")));
  p.repetition_penalty = -1.0f;
  host->set(1, p);
  EXPECT_THAT(run({0, 2, 3}, {1, 1, 2, 1, 3, 1, 4, 1}), AllOf(HasSubstr("repetition_penalty"), HasSubstr("row 1")));
}

// --- logprobs -----------------------------------------------------------------------------------

// The reference order of top logprobs: value descending (-0 == +0), then id; NaN last.
std::vector<int32_t> reference_order(const float* row, int64_t vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    if (std::isnan(row[a]) || std::isnan(row[b])) return !std::isnan(row[a]) && std::isnan(row[b]);
    return row[a] > row[b];
  });
  return ids;
}

TEST(Logprobs, RawLogprobsMatchADoubleLogSoftmax) {
  constexpr int64_t kVocab = 3000, kRows = 24;
  std::mt19937 rng(77);
  std::vector<float> logits = random_logits(kRows, kVocab, rng);
  for (int64_t i = 0; i < kVocab; i += 5) logits[5 * kVocab + i] = std::round(logits[5 * kVocab + i]);  // ties
  std::vector<SamplingParams> params(kRows);
  const int32_t counts[] = {-1, 0, 1, 2, 5, 20};
  for (int64_t r = 0; r < kRows; ++r) params[r].num_logprobs = counts[r % 6];
  auto host = buffers_of(params);
  Logprobs out(kRows);
  ThreadPool pool(2);
  raw_logprobs_cpu(Tensor(logits.data(), DType::kF32, {kRows, kVocab}), host->tensors(), out.tensors(), &pool);
  for (int64_t r = 0; r < kRows; ++r) {
    const float* row = logits.data() + r * kVocab;
    const int32_t n = params[r].num_logprobs;
    if (n < 0) {
      EXPECT_TRUE(std::isnan(out.logit_max[r]) && out.mass[r] == -1 && out.top_ids[r * kMaxLogprobs] == -1)
          << "row " << r << " wants no logprobs and must not be written";
      continue;
    }
    const double max = *std::max_element(row, row + kVocab);
    double z = 0.0;
    for (int64_t i = 0; i < kVocab; ++i) z += std::exp(static_cast<double>(row[i]) - max);
    const double log_z = std::log(z);
    EXPECT_EQ(out.logit_max[r], static_cast<float>(max));
    EXPECT_NEAR(static_cast<double>(out.mass[r]) / std::ldexp(1.0, 40), z, 1e-6 * z) << "row " << r;
    const std::vector<int32_t> order = reference_order(row, kVocab);
    for (int32_t k = 0; k < kMaxLogprobs; ++k) {
      if (k >= n) {
        EXPECT_EQ(out.top_ids[r * kMaxLogprobs + k], -1) << "row " << r << " entry " << k << " is past n";
        continue;
      }
      EXPECT_EQ(out.top_ids[r * kMaxLogprobs + k], order[k]) << "row " << r << " rank " << k;
      const double ref = row[order[k]] - max - log_z;
      const double tolerance = 4e-7 * (1.0 + std::fabs(log_z)) + 1.2e-7 * std::fabs(ref);
      EXPECT_NEAR(out.top_logprobs[r * kMaxLogprobs + k], ref, tolerance)
          << "row " << r << " rank " << k;
    }
  }
}

TEST(Logprobs, TopOrderTiesGoToTheLowerIdAndNanComesLast) {
  const float nan = std::nanf("");
  const std::vector<float> row = {1.0f, 3.0f, 3.0f, -0.0f, 0.0f, -kInf, nan, 3.0f, 2.0f};
  const RawLogprobRow got = raw_logprobs_row(row.data(), 9, kMaxLogprobs);
  std::vector<int32_t> ids;
  for (const auto& [id, lp] : got.top) ids.push_back(id);
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 2, 7, 8, 0, 3, 4, 5, 6}));  // min(n, V) entries
  EXPECT_EQ(got.logit_max, 3.0f);
  EXPECT_EQ(got.top[0].second, got.top[2].second);  // equal logits, equal logprobs
  EXPECT_EQ(got.top[5].second, got.top[6].second);  // -0 and +0 alike
  EXPECT_EQ(got.top[7].second, -kInf);
  EXPECT_TRUE(std::isnan(got.top[8].second));
  // n = 0: the statistics only; n = 2 stops inside the tie at 3.
  EXPECT_TRUE(raw_logprobs_row(row.data(), 9, 0).top.empty());
  EXPECT_EQ(raw_logprobs_row(row.data(), 9, 2).top.size(), 2u);
  EXPECT_EQ(raw_logprobs_row(row.data(), 9, 2).top[1].first, 2);
  // Like the sampler: L_max of an all-masked or all-NaN row is -inf.
  const std::vector<float> masked(4, -kInf), nans(4, nan);
  EXPECT_EQ(raw_logprobs_row(masked.data(), 4, 1).logit_max, -kInf);
  EXPECT_EQ(raw_logprobs_row(nans.data(), 4, 1).logit_max, -kInf);
}

SamplingParams random_sampling(std::mt19937& rng) {
  SamplingParams p;
  std::uniform_int_distribution<int> pick(0, 99);
  if (pick(rng) >= 20) {
    p.temperature = 0.3f + static_cast<float>(pick(rng)) / 80.0f;
    p.top_k = pick(rng) < 50 ? 0 : 1 + pick(rng) % 40;
    p.top_p = pick(rng) < 50 ? 1.0f : 0.9f;
    p.min_p = pick(rng) < 70 ? 0.0f : 0.05f;
  }
  p.seed = static_cast<int64_t>(rng());
  p.step = rng() % 1000;
  return p;
}

// Without penalties the sampled token's logprob is the one sample() itself reports, to the bit.
TEST(Logprobs, SampledLogprobEqualsTheSamplersWithoutPenalties) {
  constexpr int64_t kVocab = 2000, kRows = 32;
  std::mt19937 rng(4);
  std::vector<float> logits = random_logits(kRows, kVocab, rng);
  std::vector<SamplingParams> params;
  for (int64_t r = 0; r < kRows; ++r) {
    params.push_back(random_sampling(rng));
    params.back().num_logprobs = static_cast<int32_t>(r % 4) - 1;
  }
  auto host = buffers_of(params);
  const Tensor t(logits.data(), DType::kF32, {kRows, kVocab});
  std::vector<int32_t> ids(kRows), ids2(kRows);
  std::vector<float> sampler_logprobs(kRows);
  sample_cpu(t, host->tensors(), Tensor(ids.data(), DType::kI32, {kRows}), nullptr,
             Tensor(sampler_logprobs.data(), DType::kF32, {kRows}));
  Lists lists(std::vector<History>(kRows), params);
  Logprobs out(kRows);
  raw_logprobs_cpu(t, host->tensors(), out.tensors(), nullptr);
  apply_penalties_cpu(t, host->tensors(), lists.tensors(), nullptr);
  const Tensor ids_t(ids2.data(), DType::kI32, {kRows});
  sample_cpu(t, host->tensors(), ids_t, nullptr);
  sampled_logprobs_cpu(t, ids_t, host->tensors(), lists.tensors(), out.tensors(), nullptr);
  EXPECT_EQ(ids2, ids);
  for (int64_t r = 0; r < kRows; ++r) {
    if (params[r].num_logprobs < 0) {
      EXPECT_TRUE(std::isnan(out.sampled[r])) << "row " << r << " must not be written";
      continue;
    }
    EXPECT_EQ(std::memcmp(&out.sampled[r], &sampler_logprobs[r], 4), 0)
        << "row " << r << ": " << out.sampled[r] << " vs " << sampler_logprobs[r];
  }
}

// With penalties, logprobs stay those of the RAW logits: the sampled token's (which the penalties
// made likely) and the top n, while the token is drawn from the penalized ones.
TEST(Logprobs, AreOfTheRawLogitsUnderPenalties) {
  constexpr int64_t kVocab = 500, kRows = 12;
  std::mt19937 rng(19);
  std::vector<float> logits = random_logits(kRows, kVocab, rng);
  const std::vector<float> raw = logits;
  std::vector<History> history;
  std::vector<SamplingParams> params;
  for (int64_t r = 0; r < kRows; ++r) {
    History h = random_history(kVocab, rng);
    const int32_t boosted = static_cast<int32_t>(rng() % kVocab);
    h.output.insert(h.output.end(), 5, boosted);
    history.push_back(h);
    SamplingParams p = r % 2 ? random_sampling(rng) : SamplingParams{};
    p.frequency_penalty = -2.0f;  // every output token gains 2 per occurrence
    p.presence_penalty = -2.0f;
    p.repetition_penalty = r % 3 ? 0.5f : 1.0f;
    p.num_logprobs = static_cast<int32_t>(r % 6);
    params.push_back(p);
  }
  auto host = buffers_of(params);
  Lists lists(history, params);
  Logprobs out(kRows);
  const Tensor t(logits.data(), DType::kF32, {kRows, kVocab});
  std::vector<int32_t> ids(kRows, -1);
  const Tensor ids_t(ids.data(), DType::kI32, {kRows});
  raw_logprobs_cpu(t, host->tensors(), out.tensors(), nullptr);
  apply_penalties_cpu(t, host->tensors(), lists.tensors(), nullptr);
  sample_cpu(t, host->tensors(), ids_t, nullptr);
  sampled_logprobs_cpu(t, ids_t, host->tensors(), lists.tensors(), out.tensors(), nullptr);
  int64_t penalized_tokens = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    const float* raw_row = raw.data() + r * kVocab;
    const RawLogprobRow want = raw_logprobs_row(raw_row, kVocab, params[r].num_logprobs);
    const float sampled = sampling::token_logprob(raw_row[ids[r]], want.logit_max, want.mass);
    EXPECT_EQ(std::memcmp(&out.sampled[r], &sampled, 4), 0) << "row " << r;
    for (size_t k = 0; k < want.top.size(); ++k) {
      EXPECT_EQ(out.top_ids[r * kMaxLogprobs + k], want.top[k].first) << "row " << r;
      EXPECT_EQ(out.top_logprobs[r * kMaxLogprobs + k], want.top[k].second) << "row " << r;
    }
    const std::set<int32_t> out_tokens(history[r].output.begin(), history[r].output.end());
    penalized_tokens += out_tokens.count(ids[r]);
  }
  EXPECT_GT(penalized_tokens, kRows / 2);  // the raw logit was recovered from the saved values
}

// --- parameters ---------------------------------------------------------------------------------

TEST(PenaltyParams, DefaultsAreNeutralAndValidationNamesTheField) {
  HostSamplingBuffers buffers(2);
  const SamplingParams p = buffers.get(1);
  EXPECT_EQ(p.repetition_penalty, 1.0f);
  EXPECT_EQ(p.presence_penalty, 0.0f);
  EXPECT_EQ(p.frequency_penalty, 0.0f);
  EXPECT_EQ(p.num_logprobs, -1);
  EXPECT_FALSE(p.has_penalties());
  SamplingParams q;
  q.repetition_penalty = 1.1f;
  q.presence_penalty = -0.5f;
  q.frequency_penalty = 2.0f;
  q.num_logprobs = kMaxLogprobs;
  buffers.set(0, q);
  EXPECT_EQ(buffers.get(0).repetition_penalty, 1.1f);
  EXPECT_EQ(buffers.get(0).presence_penalty, -0.5f);
  EXPECT_EQ(buffers.get(0).frequency_penalty, 2.0f);
  EXPECT_EQ(buffers.get(0).num_logprobs, kMaxLogprobs);
  EXPECT_NO_THROW(validate_sampling_params(buffers.tensors(), 2));

  auto error = [](auto mutate, int64_t row) {
    SamplingParams bad;
    mutate(bad);
    return error_of([&] { validate_sampling_params(bad, row); });
  };
  EXPECT_THAT(error([](SamplingParams& s) { s.repetition_penalty = 0.0f; }, 3),
              AllOf(HasSubstr("repetition_penalty"), HasSubstr("row 3")));
  EXPECT_THAT(error([](SamplingParams& s) { s.repetition_penalty = kInf; }, 1), HasSubstr("repetition_penalty"));
  EXPECT_THAT(error([](SamplingParams& s) { s.presence_penalty = 2.5f; }, 2),
              AllOf(HasSubstr("presence_penalty"), HasSubstr("row 2")));
  EXPECT_THAT(error([](SamplingParams& s) { s.frequency_penalty = std::nanf(""); }, 0),
              AllOf(HasSubstr("frequency_penalty"), HasSubstr("row 0")));
  EXPECT_THAT(error([](SamplingParams& s) { s.num_logprobs = kMaxLogprobs + 1; }, 4),
              AllOf(HasSubstr("num_logprobs"), HasSubstr("row 4")));
  EXPECT_THAT(error([](SamplingParams& s) { s.num_logprobs = -2; }, 4), HasSubstr("num_logprobs"));

  // Tensors without the optional fields read them as neutral and refuse to store anything else.
  SamplingTensors partial = buffers.tensors();
  partial.num_logprobs = Tensor();
  EXPECT_EQ(get_sampling_row(partial, 0).num_logprobs, -1);
  EXPECT_THAT(error_of([&] { set_sampling_row(partial, 0, q); }), HasSubstr("num_logprobs"));
}

// --- staging and checked mode --------------------------------------------------------------------

struct StagedBatch {
  std::vector<History> history;
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::vector<int32_t>> blocks;
  std::vector<ScheduledRequest> requests;
  StepLayout layout;
  std::vector<uint64_t> memory;  // the staging
  StagedStep staged;

  // Decode steps of `params.size()` requests, padded to R rows.
  StagedBatch(std::vector<History> h, const std::vector<SamplingParams>& params, int64_t R, int64_t capacity)
      : history(std::move(h)) {
    const int64_t n = static_cast<int64_t>(params.size());
    tokens.assign(n, {5});
    for (int64_t r = 0; r < n; ++r) blocks.push_back({static_cast<int32_t>(r + 1)});
    for (int64_t r = 0; r < n; ++r) {
      ScheduledRequest s;
      s.token_ids = tokens[r];
      s.num_computed = 3;
      s.block_ids = blocks[r];
      s.sampling = params[r];
      s.prompt_ids = history[r].prompt;
      s.output_ids = history[r].output;
      requests.push_back(s);
    }
    layout = StepLayout::make(R, R, 2, capacity);
    memory.assign(layout.total_bytes / 8 + 1, ~uint64_t{0});
  }
  void stage() { staged = stage_step(requests, layout, PaddingContract{}, 16, memory.data()); }
  template <typename T>
  T* at(StepField field) {
    return layout.at<T>(memory.data(), field);
  }
  void check() {
    InputCheckLimits limits{50, 4096, 64, 16};
    check_step_inputs(layout, memory.data(), static_cast<int64_t>(requests.size()),
                      static_cast<int64_t>(requests.size()), true, PaddingContract{}, limits);
  }
};

TEST(PenaltyStaging, ListsHoldDistinctTokensWithOutputCountsAndPaddedRowsAreNeutral) {
  SamplingParams none, rep, pres;
  none.num_logprobs = 3;
  rep.repetition_penalty = 1.2f;
  pres.presence_penalty = 0.5f;
  StagedBatch b({{{1, 2, 2, 9}, {3, 1, 3}}, {{4, 4, 7}, {7, 8, 8, 8}}, {{11, 12}, {13, 13}}}, {none, rep, pres}, 5,
                100);
  b.stage();
  const int32_t* offsets = b.at<int32_t>(StepField::kPenaltyOffsets);
  const int32_t* entries = b.at<int32_t>(StepField::kPenaltyEntries);
  // Row 0 has no penalties: empty. Row 1: output {7: 1, 8: 3}, then the prompt's 4 (count 0).
  // Row 2: presence only, so the output alone: {13: 2}. Padded rows 3, 4: empty.
  EXPECT_EQ(std::vector<int32_t>(offsets, offsets + 6), (std::vector<int32_t>{0, 0, 3, 4, 4, 4}));
  EXPECT_EQ(std::vector<int32_t>(entries, entries + 8), (std::vector<int32_t>{7, 1, 8, 3, 4, 0, 13, 2}));
  EXPECT_EQ(b.staged.penalty_entries, 4);
  EXPECT_TRUE(b.staged.any_logprobs);
  EXPECT_EQ(b.staged.copy_bytes, b.layout.offsets[static_cast<size_t>(StepField::kPenaltyEntries)] + 4 * 8);
  const float* repetition = b.at<float>(sampling_step_field(&SamplingParams::repetition_penalty));
  const int32_t* num_logprobs = b.at<int32_t>(sampling_step_field(&SamplingParams::num_logprobs));
  EXPECT_EQ(repetition[1], 1.2f);
  EXPECT_EQ(b.at<float>(sampling_step_field(&SamplingParams::presence_penalty))[2], 0.5f);
  EXPECT_EQ(num_logprobs[0], 3);
  for (int r = 3; r < 5; ++r) {
    EXPECT_EQ(repetition[r], 1.0f);
    EXPECT_EQ(b.at<float>(sampling_step_field(&SamplingParams::presence_penalty))[r], 0.0f);
    EXPECT_EQ(b.at<float>(sampling_step_field(&SamplingParams::frequency_penalty))[r], 0.0f);
    EXPECT_EQ(num_logprobs[r], -1);
  }
  EXPECT_NO_THROW(b.check());
}

TEST(PenaltyStaging, AStepWithoutPenaltiesCopiesNoListBytes) {
  StagedBatch b({{{1, 2}, {3}}, {{4}, {}}}, {SamplingParams{}, SamplingParams{}}, 4, 1 << 16);
  b.stage();
  EXPECT_EQ(b.staged.penalty_entries, 0);
  EXPECT_FALSE(b.staged.any_logprobs);
  EXPECT_EQ(b.staged.copy_bytes, b.layout.offsets[static_cast<size_t>(StepField::kPenaltyEntries)]);
  EXPECT_EQ(b.layout.total_bytes, b.staged.copy_bytes + 8 * (size_t{1} << 16));  // the capacity stays behind
}

TEST(PenaltyStaging, OverflowNamesTheRunnerOption) {
  SamplingParams rep;
  rep.repetition_penalty = 1.5f;
  StagedBatch b({{{1, 2, 3}, {4}}, {{5, 6}, {7}}}, {rep, rep}, 2, 6);
  EXPECT_THAT(error_of([&] { b.stage(); }),
              AllOf(HasSubstr("max_penalty_entries = 6"), HasSubstr("at least 7 entries"), HasSubstr("request 1")));
  StagedBatch bad({{{1, -4}, {}}}, {rep}, 2, 6);
  EXPECT_THAT(error_of([&] { bad.stage(); }), AllOf(HasSubstr("prompt_ids[1] = -4"), HasSubstr("request 0")));
}

TEST(PenaltyStaging, CheckedModeRejectsBadListsAndValuesNamingFieldIndexAndValue) {
  SamplingParams rep, plain;
  rep.repetition_penalty = 1.5f;
  const std::vector<History> history = {{{1, 2, 3}, {4, 4}}, {{6}, {7}}, {{8}, {}}};
  auto fresh = [&] {
    auto b = std::make_unique<StagedBatch>(history, std::vector<SamplingParams>{rep, rep, plain}, 4, 64);
    b->stage();
    return b;
  };
  EXPECT_NO_THROW(fresh()->check());
  struct Case {
    std::function<void(StagedBatch&)> corrupt;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](StagedBatch& b) { b.at<int32_t>(StepField::kPenaltyOffsets)[1] = 7; },
       "checked mode: penalty_offsets[2] = 6, expected a value in [penalty_offsets[1] = 7, 64]"},
      {[](StagedBatch& b) { b.at<int32_t>(StepField::kPenaltyOffsets)[3] = 65; }, "penalty_offsets[3] = 65"},
      {[](StagedBatch& b) { b.at<int32_t>(StepField::kPenaltyEntries)[2] = 50; },
       "checked mode: penalty_entries.token[1] = 50, expected a token id in [0, 50)"},
      {[](StagedBatch& b) { b.at<int32_t>(StepField::kPenaltyEntries)[3] = -2; }, "penalty_entries.count[1] = -2"},
      {[](StagedBatch& b) { b.at<int32_t>(StepField::kPenaltyEntries)[2] = 4; },
       "penalty_entries.token[1] = 4 is listed twice for request 0"},
      {[](StagedBatch& b) { b.at<float>(sampling_step_field(&SamplingParams::repetition_penalty))[1] = -1.0f; },
       "checked mode: repetition_penalty[1] = -1"},
      {[](StagedBatch& b) { b.at<float>(sampling_step_field(&SamplingParams::frequency_penalty))[0] = 3.0f; }, "frequency_penalty[0] = 3"},
      {[](StagedBatch& b) { b.at<int32_t>(sampling_step_field(&SamplingParams::num_logprobs))[2] = 21; }, "num_logprobs[2] = 21"},
      {[](StagedBatch& b) { b.at<int32_t>(sampling_step_field(&SamplingParams::num_logprobs))[3] = 0; },
       "num_logprobs[3] = 0, expected -1 (padded rows want no logprobs)"},
      {[](StagedBatch& b) { b.at<float>(sampling_step_field(&SamplingParams::presence_penalty))[3] = 1.0f; }, "presence_penalty[3] = 1"},
      {[](StagedBatch& b) { b.at<int32_t>(StepField::kPenaltyOffsets)[3] = 7; },
       "penalty_offsets[3] = 7, expected 6 (a request without penalties has an empty list)"},
      {[](StagedBatch& b) { b.at<int32_t>(StepField::kPenaltyOffsets)[4] = 7; },
       "penalty_offsets[4] = 7, expected 6 (padded rows have empty lists)"},
  };
  for (const Case& c : cases) {
    auto b = fresh();
    c.corrupt(*b);
    EXPECT_THAT(error_of([&] { b->check(); }), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace fg
