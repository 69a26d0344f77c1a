// tests/test_logit_bias.cpp — OpenAI's logit_bias (sampling_params.h, item 0) on the CPU: staged by
// the runner's builder after the penalty entries, applied before the penalties by the CPU op,
// logprobs still of the raw logits, checked mode's rules for the lists, and the engine's
// validation of a request's bias. The GPU kernels are compared with these ops in
// tests/gpu/test_penalties_gpu.cpp, and graph against eager with biased requests in the runner
// sampling tests.
//
// The reference is dense and direct: each biased token's logit + its bias (one fp32 addition), then
// vLLM's penalties (penalty_reference.h) on the result, so the op must match it float for float.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "runner/input_check.h"
#include "runner/step_builder.h"
#include "sampling/cpu_logprobs.h"
#include "sampling/cpu_penalties.h"
#include "sampling/cpu_sampler.h"
#include "sampling/sampling_math.h"
#include "penalty_reference.h"
#include "test_support.h"

namespace fg {
namespace {

using ::testing::HasSubstr;
using test::error_of;

using Bias = std::vector<std::pair<int32_t, float>>;

// A decode step of `histories.size()` requests, padded to R rows, staged by the runner's builder
// into host memory, with views of its fields.
struct BiasedStep {
  std::vector<test::History> histories;
  std::vector<SamplingParams> params;
  std::vector<Bias> biases;
  std::vector<std::vector<int32_t>> tokens, blocks;
  std::vector<ScheduledRequest> requests;
  StepLayout layout;
  std::vector<uint64_t> memory;
  std::vector<float> original;
  StepViews views;

  BiasedStep(std::vector<test::History> h, std::vector<SamplingParams> p, std::vector<Bias> b, int64_t R)
      : histories(std::move(h)), params(std::move(p)), biases(std::move(b)) {
    const size_t n = histories.size();
    tokens.assign(n, {5});
    for (size_t r = 0; r < n; ++r) blocks.push_back({static_cast<int32_t>(r + 1)});
    for (size_t r = 0; r < n; ++r) {
      ScheduledRequest s;
      s.token_ids = tokens[r];
      s.num_computed = 3;
      s.block_ids = blocks[r];
      s.sampling = params[r];
      s.prompt_ids = histories[r].prompt;
      s.output_ids = histories[r].output;
      s.logit_bias = biases[r];
      requests.push_back(s);
    }
    layout = StepLayout::make(R, R, 2, 4096);
    memory.assign(layout.total_bytes / 8 + 1, ~uint64_t{0});
    stage_step(requests, layout, PaddingContract{}, 16, memory.data());
    original.assign(4096, std::nanf(""));
    views = layout.views(memory.data(), Device::kHost);
    views.penalties.original = Tensor(original.data(), DType::kF32, {4096});
  }
  template <typename T>
  T* at(StepField field) {
    return layout.at<T>(memory.data(), field);
  }
  int64_t rows() const { return static_cast<int64_t>(requests.size()); }
  void check(int64_t vocab) {
    check_step_inputs(layout, memory.data(), rows(), rows(), true, PaddingContract{}, {vocab, 4096, 64, 16});
  }
  // The ops' views over the real rows only (the padded rows hold neutral values and empty lists).
  SamplingTensors sampling() const {
    SamplingTensors s = views.sampling;
    for (const SamplingField& f : kSamplingFields) s.*f.tensor = (s.*f.tensor).rows(0, rows());
    return s;
  }
  PenaltyTensors penalties() const {
    PenaltyTensors p = views.penalties;
    p.offsets = p.offsets.rows(0, rows() + 1);
    p.bias_offsets = p.bias_offsets.rows(0, rows() + 1);
    return p;
  }
};

// Up to 20 distinct tokens, half of them from the request's output (which its penalties list).
Bias random_bias(const test::History& h, int64_t vocab, std::mt19937& rng) {
  std::uniform_real_distribution<float> value(-kMaxAbsLogitBias, kMaxAbsLogitBias);
  std::map<int32_t, float> bias;
  for (int i = static_cast<int>(rng() % 21); i > 0; --i) {
    const bool own = i % 2 == 0 && !h.output.empty();
    bias[own ? h.output[rng() % h.output.size()] : static_cast<int32_t>(rng() % vocab)] = value(rng);
  }
  return {bias.begin(), bias.end()};
}

TEST(LogitBias, IsAddedBeforeThePenaltiesAndLogprobsStayThoseOfTheRawLogits) {
  constexpr int64_t kVocab = 400, kRows = 12, kPadded = 16;
  std::mt19937 rng(31);
  std::vector<test::History> histories;
  std::vector<SamplingParams> params;
  std::vector<Bias> biases;
  int64_t both = 0;  // tokens biased and penalized
  for (int64_t r = 0; r < kRows; ++r) {
    histories.push_back(test::random_history(kVocab, rng));
    SamplingParams p = r % 3 ? test::random_penalties(rng) : SamplingParams{};
    p.num_logprobs = static_cast<int32_t>(r % 4) - 1;
    params.push_back(p);
    biases.push_back(r % 4 == 3 ? Bias{} : random_bias(histories.back(), kVocab, rng));
    const std::set<int32_t> output(histories.back().output.begin(), histories.back().output.end());
    if (p.has_penalties())
      for (const auto& [t, b] : biases.back()) both += output.count(t);
  }
  BiasedStep step(histories, params, biases, kPadded);
  EXPECT_NO_THROW(step.check(kVocab));
  std::vector<float> logits = test::random_logits(kRows, kVocab, rng);
  const std::vector<float> raw = logits;
  const Tensor t(logits.data(), DType::kF32, {kRows, kVocab});
  std::vector<float> logit_max(kRows), top_logprobs(kRows * kMaxLogprobs), sampled(kRows, std::nanf(""));
  std::vector<int64_t> mass(kRows);
  std::vector<int32_t> top_ids(kRows * kMaxLogprobs), ids(kRows, -1);
  LogprobTensors out{Tensor(logit_max.data(), DType::kF32, {kRows}), Tensor(mass.data(), DType::kI64, {kRows}),
                     Tensor(top_ids.data(), DType::kI32, {kRows, kMaxLogprobs}),
                     Tensor(top_logprobs.data(), DType::kF32, {kRows, kMaxLogprobs}),
                     Tensor(sampled.data(), DType::kF32, {kRows})};
  const Tensor ids_t(ids.data(), DType::kI32, {kRows});
  raw_logprobs_cpu(t, step.sampling(), out, nullptr);
  apply_penalties_cpu(t, step.sampling(), step.penalties(), nullptr);
  sample_cpu(t, step.sampling(), ids_t, nullptr);
  sampled_logprobs_cpu(t, ids_t, step.sampling(), step.penalties(), out, nullptr);
  for (int64_t r = 0; r < kRows; ++r) {
    std::vector<float> want(raw.begin() + r * kVocab, raw.begin() + (r + 1) * kVocab);
    for (const auto& [token, bias] : biases[r]) want[token] = want[token] + bias;
    if (params[r].has_penalties()) want = test::vllm_penalized(want.data(), kVocab, histories[r], params[r]);
    EXPECT_EQ(std::memcmp(want.data(), logits.data() + r * kVocab, kVocab * 4), 0) << "row " << r;
    if (params[r].num_logprobs < 0) continue;
    const RawLogprobRow lp = raw_logprobs_row(raw.data() + r * kVocab, kVocab, params[r].num_logprobs);
    const float expected = sampling::token_logprob(raw[r * kVocab + ids[r]], lp.logit_max, lp.mass);
    EXPECT_EQ(std::memcmp(&sampled[r], &expected, 4), 0) << "row " << r << ": the sampled token's raw logprob";
  }
  EXPECT_GT(both, 5);  // the order of bias and penalty was exercised
}

TEST(LogitBias, MovesTheGreedyChoice) {
  std::vector<float> logits = {0.5f, 3.0f, 1.0f, 2.5f};
  std::vector<int32_t> ids(1);
  const auto greedy_with = [&](const Bias& bias) {
    BiasedStep step({test::History{}}, {SamplingParams{}}, {bias}, 1);
    std::vector<float> row = logits;
    const Tensor t(row.data(), DType::kF32, {1, 4});
    apply_penalties_cpu(t, step.sampling(), step.penalties(), nullptr);
    sample_cpu(t, step.sampling(), Tensor(ids.data(), DType::kI32, {1}), nullptr);
    return ids[0];
  };
  EXPECT_EQ(greedy_with({}), 1);
  EXPECT_EQ(greedy_with({{0, 100.0f}}), 0);
  EXPECT_EQ(greedy_with({{1, -100.0f}}), 3);
  EXPECT_EQ(greedy_with({{1, -0.5f}, {3, 0.0f}}), 1);  // 3.0 - 0.5 ties token 3: the lower id wins
}

TEST(LogitBias, StagesAfterThePenaltyEntriesAndPaddedRowsHaveNone) {
  SamplingParams rep;
  rep.repetition_penalty = 1.5f;
  BiasedStep step({{{1, 2}, {3}}, {{4}, {}}, {{5}, {6}}}, {rep, SamplingParams{}, rep},
                  {{{9, 1.5f}, {3, -2.0f}}, {}, {{7, 100.0f}}}, 5);
  const int32_t* penalty_offsets = step.at<int32_t>(StepField::kPenaltyOffsets);
  const int32_t* bias_offsets = step.at<int32_t>(StepField::kLogitBiasOffsets);
  const int32_t* entries = step.at<int32_t>(StepField::kPenaltyEntries);
  EXPECT_EQ(std::vector<int32_t>(penalty_offsets, penalty_offsets + 6), (std::vector<int32_t>{0, 3, 3, 5, 5, 5}));
  EXPECT_EQ(std::vector<int32_t>(bias_offsets, bias_offsets + 6), (std::vector<int32_t>{5, 7, 7, 8, 8, 8}));
  EXPECT_EQ(entries[10], 9);
  EXPECT_EQ(std::bit_cast<float>(entries[11]), 1.5f);
  EXPECT_EQ(entries[14], 7);
  EXPECT_EQ(std::bit_cast<float>(entries[15]), 100.0f);
  EXPECT_NO_THROW(step.check(50));
}

TEST(LogitBias, CheckedModeRejectsBadListsNamingFieldAndIndex) {
  const auto fresh = [] {
    return std::make_unique<BiasedStep>(std::vector<test::History>{{{1}, {2}}, {{3}, {4}}},
                                        std::vector<SamplingParams>{SamplingParams{}, SamplingParams{}},
                                        std::vector<Bias>{{{9, 1.5f}, {3, -2.0f}}, {{7, 5.0f}}}, 4);
  };
  struct Case {
    std::function<void(BiasedStep&)> corrupt;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](BiasedStep& s) { s.at<int32_t>(StepField::kLogitBiasOffsets)[0] = 1; },
       "checked mode: logit_bias_offsets[0] = 1, expected 0 (the logit-bias entries start after the penalty"},
      {[](BiasedStep& s) { s.at<int32_t>(StepField::kLogitBiasOffsets)[1] = 5000; }, "logit_bias_offsets[1] = 5000"},
      {[](BiasedStep& s) { s.at<int32_t>(StepField::kPenaltyEntries)[2] = 9; }, "is biased twice for request 0"},
      {[](BiasedStep& s) { s.at<int32_t>(StepField::kPenaltyEntries)[0] = 60; },
       "checked mode: penalty_entries.token[0] = 60, expected a token id of a logit bias in [0, 50)"},
      {[](BiasedStep& s) { s.at<int32_t>(StepField::kPenaltyEntries)[5] = std::bit_cast<int32_t>(150.0f); },
       "checked mode: penalty_entries.bias[2] = 150"},
      {[](BiasedStep& s) { s.at<int32_t>(StepField::kLogitBiasOffsets)[3] = 2; },
       "checked mode: logit_bias_offsets[3] = 2, expected 3 (padded rows have no logit bias)"},
  };
  EXPECT_NO_THROW(fresh()->check(50));
  for (const Case& c : cases) {
    auto step = fresh();
    c.corrupt(*step);
    EXPECT_THAT(error_of([&] { step->check(50); }), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace fg
