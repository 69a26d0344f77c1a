// sampling/cpu_sampler.cpp — the CPU reference sampler: each step of the definition in
// sampling_params.h done directly on a row (the threshold of top-k by nth_element, the one of top-p
// by a sort), with the per-token floats of sampling_math.h so that it agrees with the GPU bit for bit.
#include "sampling/cpu_sampler.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "sampling/philox.h"
#include "sampling/sampling_math.h"

namespace fg {

namespace {

using sampling::fixed_weight;

// Lowest id of the maximum; NaN never compares greater, so it is never the maximum.
std::pair<int64_t, float> greedy_argmax(const float* logits, int64_t vocab) {
  float best = -std::numeric_limits<float>::infinity();
  int64_t best_id = -1;
  for (int64_t i = 0; i < vocab; ++i) {
    if (logits[i] > best || (logits[i] == best && best_id < 0)) {
      best = logits[i];
      best_id = i;
    }
  }
  return {best_id < 0 ? 0 : best_id, best};
}

// Z of the logprob: sum of fixed-point weights of the raw logits.
uint64_t raw_mass(const float* logits, int64_t vocab, float logit_max) {
  uint64_t z = 0;
  for (int64_t i = 0; i < vocab; ++i) z += fixed_weight(sampling::exp_det(sampling::fsub(logits[i], logit_max)));
  return z;
}

}  // namespace

RowSampleDetail sample_row_cpu(const float* logits, int64_t vocab, const SamplingParams& p, bool want_logprob) {
  RowSampleDetail d;
  // Not a structured binding: clang 14 (the fuzz build) cannot capture those in a lambda.
  const std::pair<int64_t, float> argmax = greedy_argmax(logits, vocab);
  const float logit_max = argmax.second;
  d.greedy = static_cast<int32_t>(argmax.first);
  d.logit_max = logit_max;
  d.token = d.greedy;
  auto finish = [&]() {
    if (want_logprob)
      d.logprob = sampling::token_logprob(logits[d.token], logit_max, raw_mass(logits, vocab, logit_max));
    return d;
  };
  if (p.temperature == 0.0f) return finish();

  // Per-token values; tokens outside B get scaled = -inf and mass 0, as in the kernel.
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const float scaled_max = sampling::scaled_logit(logit_max, p.temperature);
  std::vector<float> scaled(static_cast<size_t>(vocab));   // [vocab]
  std::vector<uint64_t> mass(static_cast<size_t>(vocab));  // [vocab]
  for (int64_t i = 0; i < vocab; ++i) {
    const float s = sampling::scaled_logit(logits[i], p.temperature);
    const float w = sampling::relative_weight(s, scaled_max);
    const uint64_t q = fixed_weight(w);
    const bool in_base = q > 0 && w >= p.min_p;
    scaled[i] = in_base ? s : kNegInf;
    mass[i] = in_base ? q : 0;
    d.base_count += in_base ? 1 : 0;
    d.base_mass += mass[i];
  }
  if (d.base_mass == 0) return finish();

  // top-k: the k-th largest scaled logit of B, ties kept.
  float threshold = kNegInf;  // kept: scaled >= threshold and scaled > -inf
  if (p.top_k > 0 && p.top_k < d.base_count) {
    std::vector<float> values;
    values.reserve(static_cast<size_t>(d.base_count));
    for (int64_t i = 0; i < vocab; ++i)
      if (mass[i] > 0) values.push_back(scaled[i]);
    std::nth_element(values.begin(), values.begin() + (p.top_k - 1), values.end(), std::greater<float>());
    threshold = values[static_cast<size_t>(p.top_k - 1)];
    d.top_k_applied = true;
    d.top_k_threshold = threshold;
  }

  // top-p: walk the distinct scaled values of A downwards until the mass reaches the target.
  if (p.top_p < 1.0f) {
    std::vector<std::pair<float, uint64_t>> active;  // (scaled, mass) of A
    uint64_t active_mass = 0;
    for (int64_t i = 0; i < vocab; ++i) {
      if (mass[i] > 0 && scaled[i] >= threshold) {
        active.emplace_back(scaled[i], mass[i]);
        active_mass += mass[i];
      }
    }
    const uint64_t target = sampling::top_p_target(p.top_p, active_mass);
    std::sort(active.begin(), active.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    uint64_t cumulative = 0;
    for (size_t i = 0; i < active.size(); ++i) {
      cumulative += active[i].second;
      const bool group_ends = i + 1 == active.size() || active[i + 1].first != active[i].first;
      if (group_ends && cumulative >= target) {
        threshold = active[i].first;
        break;
      }
    }
    d.top_p_applied = true;
    d.top_p_threshold = threshold;
  }

  // The draw: inverse CDF over K in token-id order.
  for (int64_t i = 0; i < vocab; ++i) {
    if (mass[i] > 0 && scaled[i] >= threshold) {
      ++d.kept_count;
      d.kept_mass += mass[i];
    }
  }
  FG_ASSERT(d.kept_mass > 0);
  const uint64_t bits = sampling::sampling_random_bits(static_cast<uint64_t>(p.seed), static_cast<uint64_t>(p.step));
  d.draw = sampling::draw_below(bits, d.kept_mass);
  uint64_t cumulative = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    if (mass[i] > 0 && scaled[i] >= threshold) {
      cumulative += mass[i];
      if (cumulative > d.draw) {
        d.token = static_cast<int32_t>(i);
        break;
      }
    }
  }
  d.sampled = true;
  return finish();
}

void sample_cpu(const Tensor& logits, const SamplingTensors& params, const Tensor& out_ids, ThreadPool* pool,
                const Tensor& out_logprobs) {
  check_sampling_args(logits, params, out_ids, out_logprobs, Device::kHost, kMaxSamplingVocab);
  const int64_t rows = logits.dim(0), vocab = logits.dim(1);
  validate_sampling_params(params, rows);
  const bool want_logprob = out_logprobs.data != nullptr;
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const RowSampleDetail d =
          sample_row_cpu(logits.as<const float>() + r * vocab, vocab, get_sampling_row(params, r), want_logprob);
      out_ids.as<int32_t>()[r] = d.token;
      if (want_logprob) out_logprobs.as<float>()[r] = d.logprob;
    }
  };
  if (pool != nullptr) {
    pool->parallel_for(rows, body);
  } else {
    body(0, rows);
  }
}

}  // namespace fg
