// sampling/cpu_penalties.cpp — penalties applied entry by entry, with the shared per-token formula
// of sampling_math.h (penalized_logit), so that the GPU kernel computes the same bits.
#include "sampling/cpu_penalties.h"

#include "core/error.h"
#include "sampling/sampling_math.h"

namespace fg {

void apply_penalties_cpu(const Tensor& logits, const SamplingTensors& params, const PenaltyTensors& penalties,
                         ThreadPool* pool) {
  check_penalty_args(logits, params, penalties, Device::kHost);
  const int64_t rows = logits.dim(0), vocab = logits.dim(1), capacity = penalties.entries.dim(0);
  const int32_t* offsets = penalties.offsets.as<const int32_t>();
  FG_CHECK(offsets[0] == 0, "apply_penalties: penalty offsets[0] = {}, expected 0", offsets[0]);
  for (int64_t r = 0; r < rows; ++r)
    FG_CHECK(offsets[r + 1] >= offsets[r] && offsets[r + 1] <= capacity,
             "apply_penalties: penalty offsets[{}] = {}, expected in [offsets[{}] = {}, capacity {}]", r + 1,
             offsets[r + 1], r, offsets[r], capacity);
  const int32_t* entries = penalties.entries.as<const int32_t>();
  float* original = penalties.original.as<float>();
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      if (offsets[r] == offsets[r + 1]) continue;
      SamplingParams p;
      p.repetition_penalty = params.repetition_penalty.as<const float>()[r];
      p.presence_penalty = params.presence_penalty.as<const float>()[r];
      p.frequency_penalty = params.frequency_penalty.as<const float>()[r];
      validate_sampling_params(p, r);
      float* row = logits.as<float>() + r * vocab;
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
