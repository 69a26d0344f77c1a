// backend/cpu/cpu_sampling.cpp — token selection on the CPU backend: the reference sampler, and the
// reference token mask, penalties and logprobs around it (in a step's order: mask, raw logprobs,
// bias and penalties, sample, the sampled token's logprob; sampling_params.h).
#include <algorithm>
#include <atomic>

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

void CpuBackend::upload_token_mask_now(const Tensor& mask, const TokenMaskUpload& upload) {
  check_token_mask_upload_args(mask, upload, Device::kHost);
  // Ops run as they are called here, on the host's own thread: the publication must precede them.
  const uint32_t want = static_cast<uint32_t>(*upload.waited.as<int32_t>()) + 1;
  const uint32_t published = std::atomic_ref<const uint32_t>(*upload.published).load(std::memory_order_acquire);
  FG_CHECK(published == want,
           "token mask: the step expects publication {} of its mask rows and finds {}; on the CPU the host must "
           "publish before the step runs",
           want, published);
  *upload.waited.as<int32_t>() = static_cast<int32_t>(want);
  const int64_t rows = mask.dim(0), words = mask.dim(1);
  for (int64_t r = 0; r < rows; ++r)
    if (upload.changed[r] != 0)
      std::copy_n(upload.mirror + r * words, words, mask.as<int32_t>() + r * words);
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
