// sampling/cpu_penalties.cpp — penalties applied entry by entry, with the shared per-token formula
// of sampling_math.h (penalized_logit), so that the GPU kernel computes the same bits.
#include "sampling/cpu_penalties.h"

#include <cmath>

#include "core/error.h"
#include "sampling/sampling_math.h"

namespace fg {

namespace {

// Offsets [rows + 1] that must not decrease and must stay in [floor, capacity].
void check_offsets(const int32_t* offsets, int64_t rows, int64_t floor, int64_t capacity, const char* what) {
  FG_CHECK(offsets[0] == floor, "apply_penalties: {} offsets[0] = {}, expected {}", what, offsets[0], floor);
  for (int64_t r = 0; r < rows; ++r)
    FG_CHECK(offsets[r + 1] >= offsets[r] && offsets[r + 1] <= capacity,
             "apply_penalties: {} offsets[{}] = {}, expected in [offsets[{}] = {}, capacity {}]", what, r + 1,
             offsets[r + 1], r, offsets[r], capacity);
}

}  // namespace

void apply_penalties_cpu(const Tensor& logits, const SamplingTensors& params, const PenaltyTensors& penalties,
                         ThreadPool* pool) {
  check_penalty_args(logits, params, penalties, Device::kHost);
  const int64_t rows = logits.dim(0), vocab = logits.dim(1), capacity = penalties.entries.dim(0);
  const int32_t* offsets = penalties.offsets.as<const int32_t>();
  check_offsets(offsets, rows, 0, capacity, "penalty");
  const int32_t* bias_offsets = penalties.bias_offsets.as<const int32_t>();  // null: no biases
  if (bias_offsets != nullptr) check_offsets(bias_offsets, rows, offsets[rows], capacity, "logit-bias");
  const int32_t* entries = penalties.entries.as<const int32_t>();
  float* original = penalties.original.as<float>();
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* row = logits.as<float>() + r * vocab;
      for (int64_t e = bias_offsets ? bias_offsets[r] : 0; e < (bias_offsets ? bias_offsets[r + 1] : 0); ++e) {
        const int32_t token = entries[2 * e];
        const float bias = sampling::bits_float(static_cast<uint32_t>(entries[2 * e + 1]));
        FG_CHECK(token >= 0 && token < vocab && std::fabs(bias) <= kMaxAbsLogitBias,
                 "apply_penalties: logit-bias entry {} of row {} is (token {}, bias {}); expected a token in [0, {}) "
                 "and a bias in [-{}, {}]",
                 e, r, token, bias, vocab, kMaxAbsLogitBias, kMaxAbsLogitBias);
        original[e] = row[token];
        row[token] = sampling::biased_logit(row[token], entries[2 * e + 1]);
      }
      if (offsets[r] == offsets[r + 1]) continue;
      SamplingParams p;
      p.repetition_penalty = params.repetition_penalty.as<const float>()[r];
      p.presence_penalty = params.presence_penalty.as<const float>()[r];
      p.frequency_penalty = params.frequency_penalty.as<const float>()[r];
      validate_sampling_params(p, r);
      for (int64_t e = offsets[r]; e < offsets[r + 1]; ++e) {
        const int32_t token = entries[2 * e], count = entries[2 * e + 1];
        FG_CHECK(token >= 0 && token < vocab && count >= 0,
                 "apply_penalties: penalty entry {} of row {} is (token {}, count {}); expected a token in [0, {}) "
                 "and a count >= 0",
                 e, r, token, count, vocab);
        original[e] = row[token];
        row[token] = sampling::penalized_logit(row[token], p.repetition_penalty, p.frequency_penalty,
                                               p.presence_penalty, count);
      }
    }
  };
  if (pool != nullptr) {
    pool->parallel_for(rows, body);
  } else {
    body(0, rows);
  }
}

}  // namespace fg
