// backend/cuda/gather_kernels.h — launchers of the copies that gather rows or columns: the row
// gather behind both the embedding lookup (rows of the token table by token id) and gather_rows
// (rows of the hidden states by logits_indices), and the split of one matmul's output columns into
// the tensors of its parts.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/linear_outputs.h"

namespace fg::cuda {

// out[i] = src[indices[i]] for i < num_indices, rows of row_bytes bytes (a multiple of 16; both
// pointers 16-byte aligned). Indices outside [0, num_src_rows) are clamped so that a bad id cannot
// read outside the table (the runner validates ids in checked mode; the CPU backend rejects them).
void launch_gather_rows(const void* src, const int32_t* indices, void* out, int64_t num_indices,
                        int64_t num_src_rows, int64_t row_bytes, cudaStream_t stream);

// Each part p of `parts` (add_to_output unset) gets the columns [begin[p], begin[p + 1]) of the n
// rows of span [n, begin[parts]] (BF16): the copy of a linear_group's parts out of one GEMM's
// output. Every part's width is a multiple of 8; all pointers 16-byte aligned.
void launch_split_columns(const void* span, int64_t n, const LinearOutputs& parts, cudaStream_t stream);

}  // namespace fg::cuda
