// tests/penalty_reference.h — what the penalty and logit-bias tests share: a request's history, a
// dense re-implementation of vLLM's apply_penalties (the reference the CPU op is compared with,
// float for float), and random logits, histories and penalty settings.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "sampling/sampling_params.h"

namespace fg::test {

// One request's history: P and its output.
struct History {
  std::vector<int32_t> prompt, output;
};

// vLLM's apply_penalties on one row, densely, float for float.
inline std::vector<float> vllm_penalized(const float* logits, int64_t vocab, const History& h, const SamplingParams& p) {
  std::vector<bool> prompt_mask(vocab, false), output_mask(vocab, false);
  std::vector<int64_t> counts(vocab, 0);
  for (int32_t t : h.prompt) prompt_mask[t] = true;
  for (int32_t t : h.output) {
    output_mask[t] = true;
    ++counts[t];
  }
  std::vector<float> out(logits, logits + vocab);
  for (int64_t i = 0; i < vocab; ++i) {
    float l = out[i];
    const float penalty = prompt_mask[i] || output_mask[i] ? p.repetition_penalty : 1.0f;
    l = l > 0.0f ? l / penalty : l * penalty;
    l -= p.frequency_penalty * static_cast<float>(counts[i]);
    l -= p.presence_penalty * (output_mask[i] ? 1.0f : 0.0f);
    out[i] = l;
  }
  return out;
}

inline std::vector<float> random_logits(int64_t rows, int64_t vocab, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(rows * vocab));
  for (float& v : logits) v = normal(rng);
  for (int64_t r = 0; r < rows; r += 3)
    for (int64_t i = r % 7; i < vocab; i += 11) logits[r * vocab + i] = -std::numeric_limits<float>::infinity();  // masked tokens
  return logits;
}

inline History random_history(int64_t vocab, std::mt19937& rng) {
  History h;
  std::uniform_int_distribution<int> len(0, 300);
  // Prompt and output draw from overlapping id ranges, and the output from few ids, so that tokens
  // repeat and occur in both.
  const int32_t lo = static_cast<int32_t>(rng() % (vocab / 2));
  std::uniform_int_distribution<int32_t> prompt_id(lo, static_cast<int32_t>(vocab) - 1);
  std::uniform_int_distribution<int32_t> output_id(lo, lo + 60);
  for (int i = len(rng); i > 0; --i) h.prompt.push_back(prompt_id(rng));
  for (int i = len(rng) / 3; i > 0; --i) h.output.push_back(output_id(rng));
  return h;
}

inline SamplingParams random_penalties(std::mt19937& rng) {
  SamplingParams p;
  std::uniform_int_distribution<int> pick(0, 9);
  std::uniform_real_distribution<float> penalty(-2.0f, 2.0f), repetition(0.1f, 3.0f);
  const float reps[] = {1.0f, 1.0f, 1.3f, 0.5f, 2.0f};
  p.repetition_penalty = pick(rng) < 5 ? reps[pick(rng) % 5] : repetition(rng);
  p.presence_penalty = pick(rng) < 4 ? 0.0f : penalty(rng);
  p.frequency_penalty = pick(rng) < 4 ? 0.0f : penalty(rng);
  return p;
}

}  // namespace fg::test
