// backend/cpu/cpu_sampling.cpp — token selection on the CPU backend: the reference sampler, and the
// reference penalties and logprobs around it.
#include "backend/cpu/cpu_backend.h"
#include "sampling/cpu_logprobs.h"
#include "sampling/cpu_penalties.h"
#include "sampling/cpu_sampler.h"

namespace fg {

void CpuBackend::sample_now(const Tensor& logits, const SamplingTensors& params, const Tensor& out_ids) {
  sample_cpu(logits, params, out_ids, &pool_);
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
