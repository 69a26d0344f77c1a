// sampling/cpu_sampler.h — the CPU reference of token sampling: the semantics written in
// sampling/sampling_params.h, implemented plainly (sorts and loops), as the oracle of the CUDA
// kernel and the sampler of the CPU backend. In a step it reads logits that the ops before it have
// rewritten, in this order: the token mask (cpu_token_mask.h), then the logit bias and penalties
// (cpu_penalties.h); then it applies temperature, min-p, top-k and top-p and draws. Logprobs
// (cpu_logprobs.h) are of the masked logits before bias and penalties.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "sampling/sampling_params.h"

namespace fg {

// logits F32 [m, V] (host) → out_ids I32 [m]; out_logprobs F32 [m] when defined (the raw
// log-softmax of each chosen token). Parameter tensors have at least m rows; the first m are used
// and validated. Rows run in parallel on `pool` (nullptr: serially); each row's result depends
// on that row's logits and parameters only.
void sample_cpu(const Tensor& logits, const SamplingTensors& params, const Tensor& out_ids, ThreadPool* pool,
                const Tensor& out_logprobs = Tensor());

// What one row's sampling decided, for tests and for explaining a CPU/GPU difference.
struct RowSampleDetail {
  int32_t token = 0;
  int32_t greedy = 0;    // lowest id of the maximum logit
  bool sampled = false;  // false: the greedy id was returned (temperature 0 or no weight)
  float logit_max = 0.0f;
  int64_t base_count = 0;  // |B|: tokens with weight passing min-p
  uint64_t base_mass = 0;  // W_B
  bool top_k_applied = false;
  float top_k_threshold = 0.0f;  // the k-th largest scaled logit
  bool top_p_applied = false;
  float top_p_threshold = 0.0f;  // sigma
  int64_t kept_count = 0;        // |K|
  uint64_t kept_mass = 0;        // W_K
  uint64_t draw = 0;             // u in [0, W_K)
  float logprob = 0.0f;          // when asked for
};

// One row: `logits` [vocab]. Parameters are assumed valid.
RowSampleDetail sample_row_cpu(const float* logits, int64_t vocab, const SamplingParams& params, bool want_logprob);

}  // namespace fg
