// backend/cuda/cuda_sampling_ops.cpp — CudaBackend's token-mask, penalty and logprob ops: the
// argument checks shared with the CPU reference (sampling_params.h), with messages, then the
// raw-pointer launches of token_mask_kernels.cu, penalty_kernels.cu and logprob_kernels.cu on the
// backend's stream. Parameter values are not
// read here (they are device memory); the runner validates the host copy in checked mode.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/logprob_kernels.h"
#include "backend/cuda/penalty_kernels.h"
#include "backend/cuda/token_mask_kernels.h"

namespace fg {

static_assert(cuda::kMaxTopLogprobs == kMaxLogprobs, "logprob_kernels.h and sampling_params.h disagree");

void CudaBackend::apply_token_mask(const Tensor& logits, const Tensor& mask) {
  check_token_mask_args(logits, mask, Device::kCuda);
  cuda::TokenMaskKernelArgs a;
  a.logits = logits.as<float>();
  a.mask = mask.as<const int32_t>();
  a.rows = logits.dim(0);
  a.vocab = logits.dim(1);
  a.words = mask.dim(1);
  cuda::launch_apply_token_mask(a, stream_);
}

void CudaBackend::upload_token_mask(const Tensor& mask, const TokenMaskUpload& upload) {
  check_token_mask_upload_args(mask, upload, Device::kCuda);
  // The host pointers are pinned (allocate_staging) and, under unified addressing (checked when
  // the backend starts), the device reads them at the same addresses.
  cuda::TokenMaskUploadKernelArgs a;
  a.mask = mask.as<int32_t>();
  a.mirror = upload.mirror;
  a.changed = upload.changed;
  a.published = upload.published;
  a.waited = reinterpret_cast<uint32_t*>(upload.waited.as<int32_t>());
  a.changed_on_device = upload.waited.as<int32_t>() + 1;
  a.rows = mask.dim(0);
  a.words = mask.dim(1);
  cuda::launch_upload_token_mask(a, stream_);
}

void CudaBackend::raw_logprobs(const Tensor& logits, const SamplingTensors& params, const LogprobTensors& out) {
  check_raw_logprob_args(logits, params, out, Device::kCuda);
  cuda::RawLogprobKernelArgs a;
  a.logits = logits.as<const float>();
  a.rows = logits.dim(0);
  a.vocab = logits.dim(1);
  a.num_logprobs = params.num_logprobs.as<const int32_t>();
  a.logit_max = out.logit_max.as<float>();
  a.mass = out.mass.as<int64_t>();
  a.top_ids = out.top_ids.as<int32_t>();
  a.top_logprobs = out.top_logprobs.as<float>();
  cuda::launch_raw_logprobs(a, stream_);
}

void CudaBackend::apply_penalties(const Tensor& logits, const SamplingTensors& params,
                                  const PenaltyTensors& penalties) {
  check_penalty_args(logits, params, penalties, Device::kCuda);
  FG_CHECK(reinterpret_cast<uintptr_t>(penalties.entries.data) % 8 == 0,
           "cuda backend: apply_penalties needs 8-byte aligned penalty entries");
  cuda::PenaltyKernelArgs a;
  a.logits = logits.as<float>();
  a.rows = logits.dim(0);
  a.vocab = logits.dim(1);
  a.repetition_penalty = params.repetition_penalty.as<const float>();
  a.presence_penalty = params.presence_penalty.as<const float>();
  a.frequency_penalty = params.frequency_penalty.as<const float>();
  a.offsets = penalties.offsets.as<const int32_t>();
  a.entries = penalties.entries.as<const int32_t>();
  a.bias_offsets = penalties.bias_offsets.as<const int32_t>();
  a.capacity = penalties.entries.dim(0);
  a.original = penalties.original.as<float>();
  cuda::launch_apply_penalties(a, stream_);
}

void CudaBackend::sampled_logprobs(const Tensor& logits, const Tensor& ids, const SamplingTensors& params,
                                   const PenaltyTensors& penalties, const LogprobTensors& out) {
  check_sampled_logprob_args(logits, ids, params, penalties, out, Device::kCuda);
  FG_CHECK(reinterpret_cast<uintptr_t>(penalties.entries.data) % 8 == 0,
           "cuda backend: sampled_logprobs needs 8-byte aligned penalty entries");
  cuda::SampledLogprobKernelArgs a;
  a.logits = logits.as<const float>();
  a.rows = logits.dim(0);
  a.vocab = logits.dim(1);
  a.ids = ids.as<const int32_t>();
  a.num_logprobs = params.num_logprobs.as<const int32_t>();
  a.offsets = penalties.offsets.as<const int32_t>();
  a.entries = penalties.entries.as<const int32_t>();
  a.bias_offsets = penalties.bias_offsets.as<const int32_t>();
  a.capacity = penalties.entries.dim(0);
  a.original = penalties.original.as<const float>();
  a.logit_max = out.logit_max.as<const float>();
  a.mass = out.mass.as<const int64_t>();
  a.sampled = out.sampled.as<float>();
  cuda::launch_sampled_logprobs(a, stream_);
}

}  // namespace fg
