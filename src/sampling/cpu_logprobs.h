// sampling/cpu_logprobs.h — the CPU reference of item 4 of sampling_params.h: the raw log-softmax
// statistics and top-n logprobs of rows that ask for logprobs, and the sampled token's logprob
// (its raw logit recovered from the penalty lists' saved values when the token was penalized).
// The oracle of the CUDA kernels and the ops of the CPU backend.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "sampling/sampling_params.h"

namespace fg {

// Item 4 for one row of raw logits [vocab]: L_max, Z and the top min(n, vocab) tokens (n <= 0:
// none) as (id, logprob), most likely first.
struct RawLogprobRow {
  float logit_max = 0.0f;
  uint64_t mass = 0;
  std::vector<std::pair<int32_t, float>> top;
};
RawLogprobRow raw_logprobs_row(const float* logits, int64_t vocab, int32_t n);

// For rows r < m (logits F32 [m, V], host) with num_logprobs[r] >= 0: out.logit_max, out.mass and
// the first min(num_logprobs[r], V) entries of out.top_ids / out.top_logprobs. Call on the raw
// logits, before apply_penalties. Other rows and entries are not written.
void raw_logprobs_cpu(const Tensor& logits, const SamplingTensors& params, const LogprobTensors& out,
                      ThreadPool* pool);

// For rows r < m with num_logprobs[r] >= 0: out.sampled[r] = token_logprob(raw logit of ids[r],
// out.logit_max[r], out.mass[r]), the raw logit being penalties.original[e] when ids[r] is the
// token of an entry e of row r, else logits[r, ids[r]] (never penalized).
void sampled_logprobs_cpu(const Tensor& logits, const Tensor& ids, const SamplingTensors& params,
                          const PenaltyTensors& penalties, const LogprobTensors& out, ThreadPool* pool);

}  // namespace fg
