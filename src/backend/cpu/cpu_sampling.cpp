// backend/cpu/cpu_sampling.cpp — token selection on the CPU backend: the reference sampler, and the
// reference token mask, penalties and logprobs around it (in a step's order: mask, raw logprobs,
// bias and penalties, sample, the sampled token's logprob; sampling_params.h).
#include "backend/cpu/cpu_backend.h"
#include "sampling/cpu_logprobs.h"
#include "sampling/cpu_penalties.h"
#include "sampling/cpu_sampler.h"
#include "sampling/cpu_token_mask.h"

namespace fg {

void CpuBackend::sample_now(const Tensor& logits, const SamplingTensors& params, const Tensor& out_ids) {
  sample_cpu(logits, params, out_ids, &pool_);
}

void CpuBackend::apply_token_mask_now(const Tensor& logits, const Tensor& mask) {
  apply_token_mask_cpu(logits, mask, &pool_);
}

void CpuBackend::raw_logprobs_now(const Tensor& logits, const SamplingTensors& params, const LogprobTensors& out) {
  raw_logprobs_cpu(logits, params, out, &pool_);
}

void CpuBackend::apply_penalties_now(const Tensor& logits, const SamplingTensors& params,
                                     const PenaltyTensors& penalties) {
  apply_penalties_cpu(logits, params, penalties, &pool_);
}

void CpuBackend::sampled_logprobs_now(const Tensor& logits, const Tensor& ids, const SamplingTensors& params,
                                      const PenaltyTensors& penalties, const LogprobTensors& out) {
  sampled_logprobs_cpu(logits, ids, params, penalties, out, &pool_);
}

}  // namespace fg
