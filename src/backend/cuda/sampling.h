// backend/cuda/sampling.h — token sampling on the GPU: greedy, temperature, min-p, top-k, top-p and
// the Philox draw, with the semantics of sampling/sampling_params.h, bit-identical to the CPU
// reference (sampling/cpu_sampler.h). In a step it reads logits already masked
// (token_mask_kernels.h) and then biased and penalized (penalty_kernels.h), in that order; logprobs
// (logprob_kernels.h) are of the masked logits before bias and penalties (sampling_params.h).
//
// One thread-block cluster per row: up to 8 CTAs of 512 threads split the row and keep it in shared
// memory (scaled logit + weight, 8 bytes per token); thresholds are found by radix select over the
// bits of the scaled logits with cluster-wide histograms, masses are exact integers, so the launch
// shape never changes a result. Launch parameters depend on (rows, vocab) only, nothing is read
// back to the host and nothing is allocated: the launch can be captured in a CUDA graph.
//
// This header is included by host code only (.cpp): it forward-declares the tensor types because
// .cu files cannot include core/tensor.h (its fmt checks do not compile under nvcc).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace fg {
struct Tensor;
struct SamplingTensors;
}  // namespace fg

namespace fg::cuda {

// The largest vocabulary: 8 CTAs x 13 tiles x 2048 tokens (208 KiB of shared memory per CTA).
inline constexpr int64_t kMaxCudaSamplingVocab = 8 * 13 * 2048;

// Workspace the launcher needs for up to max_rows rows of `vocab` tokens. The kernel works in
// shared memory and needs none today (0); the argument pair is kept so callers size it now.
size_t sampling_workspace_bytes(int64_t max_rows, int64_t vocab);

// logits F32 [m, V] → out_ids I32 [m] (and out_logprobs F32 [m], the raw log-softmax of each chosen
// token, when that tensor is given). Parameter tensors are device tensors of at least m rows (the
// persistent step buffers); their values are not validated here (the runner validates the host
// copy). Shapes, dtypes and devices are checked, with messages, on the host.
void launch_sampling(const Tensor& logits, const SamplingTensors& params, const Tensor& out_ids, void* workspace,
                     size_t workspace_bytes, cudaStream_t stream);
void launch_sampling(const Tensor& logits, const SamplingTensors& params, const Tensor& out_ids, void* workspace,
                     size_t workspace_bytes, cudaStream_t stream, const Tensor& out_logprobs);

// The kernel-level entry (sampling.cu), for launch_sampling and the benchmark. Trusts its
// arguments: 1 <= vocab <= kMaxCudaSamplingVocab, every pointer on the device.
struct SamplingKernelArgs {
  const float* logits = nullptr;  // [rows, vocab]
  int64_t rows = 0;
  int64_t vocab = 0;
  const float* temperature = nullptr;  // [>= rows]
  const int32_t* top_k = nullptr;      // [>= rows]
  const float* top_p = nullptr;        // [>= rows]
  const float* min_p = nullptr;        // [>= rows]
  const int64_t* seed = nullptr;       // [>= rows]
  const int64_t* step = nullptr;       // [>= rows]
  int32_t* out_ids = nullptr;          // [rows]
  float* out_logprobs = nullptr;       // [rows], or nullptr
};
void launch_sampling_kernel(const SamplingKernelArgs& args, cudaStream_t stream);

}  // namespace fg::cuda
