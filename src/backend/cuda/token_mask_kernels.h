// backend/cuda/token_mask_kernels.h — the token mask of sampling_params.h (item 0, before every
// other sampling op) on the GPU, in place on the logits, bit-identical to the CPU reference
// (sampling/cpu_token_mask.h): -inf over every token a row's mask does not allow.
//
// One block per row. A first pass over the row's words decides whether the row allows every token
// (an unconstrained or padded row: all ones, the common case, done after one read of W words) or
// none (left as it is); only a constrained row takes the second pass, one thread per token, a warp
// per word. The grid is the number of rows (the padded batch under a graph), so the launch can be
// captured: nothing is read from the host at run time.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fg::cuda {

// Trusted, device pointers (the tensor-level checks are in cuda_sampling_ops.cpp).
struct TokenMaskKernelArgs {
  float* logits = nullptr;       // [rows, vocab], masked in place
  const int32_t* mask = nullptr;  // [rows, words]: bit t % 32 of word t / 32 = token t allowed
  int64_t rows = 0;
  int64_t vocab = 0;
  int64_t words = 0;  // ceil(vocab / 32)
};
void launch_apply_token_mask(const TokenMaskKernelArgs& args, cudaStream_t stream);

// Backend::upload_token_mask: one block, whose first thread waits for the host's publication (a
// volatile read of pinned host memory, backing off with __nanosleep), brings the rows' changed
// flags into device memory; then a block per row copies the rows the host flagged, reading host
// memory past the caches (its bytes change between steps). The flags cross the bus once, in one
// block: read by each row's block from the host, they cost a step ~150 µs on an H100 (65 rows,
// 8 warps each).
// Rows not flagged cost one device read.
struct TokenMaskUploadKernelArgs {
  int32_t* mask = nullptr;              // device [rows, words]
  const int32_t* mirror = nullptr;      // pinned host [rows, words]
  const int32_t* changed = nullptr;     // pinned host [rows]
  const uint32_t* published = nullptr;  // pinned host
  uint32_t* waited = nullptr;           // device
  int32_t* changed_on_device = nullptr; // device [rows]: the flags, brought over by the wait
  int64_t rows = 0;
  int64_t words = 0;
};
void launch_upload_token_mask(const TokenMaskUploadKernelArgs& args, cudaStream_t stream);

}  // namespace fg::cuda
