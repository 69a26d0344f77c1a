// backend/cuda/gather_kernels.h — launcher of the row gather behind both the embedding lookup
// (rows of the token table by token id) and gather_rows (rows of the hidden states by
// logits_indices).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fg::cuda {

// out[i] = src[indices[i]] for i < num_indices, rows of row_bytes bytes (a multiple of 16; both
// pointers 16-byte aligned). Indices outside [0, num_src_rows) are clamped so that a bad id cannot
// read outside the table (the runner validates ids in checked mode; the CPU backend rejects them).
void launch_gather_rows(const void* src, const int32_t* indices, void* out, int64_t num_indices,
                        int64_t num_src_rows, int64_t row_bytes, cudaStream_t stream);

}  // namespace fg::cuda
