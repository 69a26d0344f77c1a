// backend/cpu/cpu_sampling.cpp — token selection on the CPU backend: the reference sampler.
#include "backend/cpu/cpu_backend.h"
#include "sampling/cpu_sampler.h"

namespace fg {

void CpuBackend::sample_now(const Tensor& logits, const SamplingTensors& params, const Tensor& out_ids) {
  sample_cpu(logits, params, out_ids, &pool_);
}

}  // namespace fg
