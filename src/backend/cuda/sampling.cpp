// backend/cuda/sampling.cpp — the tensor-level launcher of GPU sampling: checks shapes, dtypes and
// devices with messages (host code, so fmt is available), then calls the kernel launcher of
// sampling.cu with raw pointers.
#include "backend/cuda/sampling.h"

#include "core/error.h"
#include "core/tensor.h"
#include "sampling/sampling_params.h"

namespace fg::cuda {

size_t sampling_workspace_bytes(int64_t max_rows, int64_t vocab) {
  FG_CHECK(max_rows >= 0 && vocab > 0 && vocab <= kMaxCudaSamplingVocab,
           "sampling workspace: {} rows of {} tokens (the CUDA sampler handles 1 to {} tokens)", max_rows, vocab,
           kMaxCudaSamplingVocab);
  return 0;
}

void launch_sampling(const Tensor& logits, const SamplingTensors& params, const Tensor& out_ids, void* workspace,
                     size_t workspace_bytes, cudaStream_t stream) {
  launch_sampling(logits, params, out_ids, workspace, workspace_bytes, stream, Tensor());
}

void launch_sampling(const Tensor& logits, const SamplingTensors& params, const Tensor& out_ids, void* workspace,
                     size_t workspace_bytes, cudaStream_t stream, const Tensor& out_logprobs) {
  check_sampling_args(logits, params, out_ids, out_logprobs, Device::kCuda, kMaxCudaSamplingVocab);
  const int64_t rows = logits.dim(0), vocab = logits.dim(1);
  const size_t needed = sampling_workspace_bytes(rows, vocab);
  FG_CHECK(workspace_bytes >= needed && (needed == 0 || workspace != nullptr),
           "sampling: workspace of {} bytes given, {} needed", workspace_bytes, needed);
  SamplingKernelArgs args;
  args.logits = logits.as<const float>();
  args.rows = rows;
  args.vocab = vocab;
  args.temperature = params.temperature.as<const float>();
  args.top_k = params.top_k.as<const int32_t>();
  args.top_p = params.top_p.as<const float>();
  args.min_p = params.min_p.as<const float>();
  args.seed = params.seed.as<const int64_t>();
  args.step = params.step.as<const int64_t>();
  args.out_ids = out_ids.as<int32_t>();
  args.out_logprobs = out_logprobs.data != nullptr ? out_logprobs.as<float>() : nullptr;
  launch_sampling_kernel(args, stream);
}

}  // namespace fg::cuda
