// backend/cuda/logprob_kernels.h — logprobs of sampling_params.h (item 4) on the GPU, bit-identical
// to the CPU reference (sampling/cpu_logprobs.h): L_max, Z and the top n of the raw logits of each
// row that wants logprobs, and, after sampling, the sampled token's raw logprob.
//
// raw_logprobs: one block of 512 threads per row. Each thread keeps its best min(n, 20) tokens
// by logprob_rank (a 64-bit key that orders by logit, then by the lower id) while it reads its
// strided share of the row; then n rounds of a block-wide max over the threads' list heads merge
// them. Ranks are distinct integers and Z an integer sum, so nothing depends on the thread layout.
// sampled_logprobs: one block of 128 threads per row looks for the sampled token in the row's
// penalty list (its raw logit was saved there if it was penalized).
//
// Rows with num_logprobs = -1 return after one read; grids are the number of rows (the padded
// batch under a graph), so both launches can be captured.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fg::cuda {

// == fg::kMaxLogprobs (checked in cuda_sampling_ops.cpp: .cu files cannot include its header).
inline constexpr int kMaxTopLogprobs = 20;

// Trusted, device pointers (the tensor-level checks are in cuda_sampling_ops.cpp).
struct RawLogprobKernelArgs {
  const float* logits = nullptr;  // [rows, vocab], raw
  int64_t rows = 0;
  int64_t vocab = 0;
  const int32_t* num_logprobs = nullptr;  // [>= rows]
  float* logit_max = nullptr;             // [rows]
  int64_t* mass = nullptr;                // [rows]
  int32_t* top_ids = nullptr;             // [rows, kMaxTopLogprobs]
  float* top_logprobs = nullptr;          // [rows, kMaxTopLogprobs]
};
void launch_raw_logprobs(const RawLogprobKernelArgs& args, cudaStream_t stream);

struct SampledLogprobKernelArgs {
  const float* logits = nullptr;  // [rows, vocab], penalized
  int64_t rows = 0;
  int64_t vocab = 0;
  const int32_t* ids = nullptr;           // [rows]: the sampled tokens
  const int32_t* num_logprobs = nullptr;  // [>= rows]
  const int32_t* offsets = nullptr;       // [rows + 1]: the penalty lists
  const int32_t* entries = nullptr;       // [capacity, 2], 8-byte aligned
  const int32_t* bias_offsets = nullptr;  // [rows + 1] or null: the logit-bias lists
  int64_t capacity = 0;
  const float* original = nullptr;   // [capacity]
  const float* logit_max = nullptr;  // [rows]
  const int64_t* mass = nullptr;     // [rows]
  float* sampled = nullptr;          // [rows]
};
void launch_sampled_logprobs(const SampledLogprobKernelArgs& args, cudaStream_t stream);

}  // namespace fg::cuda
