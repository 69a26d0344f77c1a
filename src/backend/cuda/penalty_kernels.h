// backend/cuda/penalty_kernels.h — the repetition, presence and frequency penalties of
// sampling_params.h (item 0) on the GPU, in place on the logits, bit-identical to the CPU
// reference (sampling/cpu_penalties.h): the same per-token formula (sampling_math.h's
// penalized_logit) applied to the same listed tokens.
//
// One block per row walks the row's entries of the step's penalty lists; a row with an empty list
// (no penalties, or a padded row) returns after reading two offsets. The grid is the number of
// rows (the padded batch under a graph), so the launch can be captured.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fg::cuda {

// Trusted, device pointers (the tensor-level checks are in cuda_sampling_ops.cpp). Offsets are
// clamped to [0, capacity] and tokens outside [0, vocab) skipped, so that a bad list cannot write
// outside its row (checked mode rejects such lists; the CPU backend fails on them).
struct PenaltyKernelArgs {
  float* logits = nullptr;  // [rows, vocab], penalized in place
  int64_t rows = 0;
  int64_t vocab = 0;
  const float* repetition_penalty = nullptr;  // [>= rows]
  const float* presence_penalty = nullptr;    // [>= rows]
  const float* frequency_penalty = nullptr;   // [>= rows]
  const int32_t* offsets = nullptr;           // [rows + 1]
  const int32_t* entries = nullptr;           // [capacity, 2]: (token, output count), 8-byte aligned
  const int32_t* bias_offsets = nullptr;      // [rows + 1] or null: the logit-bias lists, (token, bias bits)
  int64_t capacity = 0;
  float* original = nullptr;  // [capacity]: the logit of each applied entry before it (biases: the raw one)
};
void launch_apply_penalties(const PenaltyKernelArgs& args, cudaStream_t stream);

}  // namespace fg::cuda
