// sampling/cpu_token_mask.h — the token mask of sampling_params.h (item 0, first of all) on the
// CPU: the reference of the CUDA kernel (backend/cuda/token_mask_kernels.h) and the CPU backend's
// op. Writing -inf has no rounding, so the two agree bit for bit by construction.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace fg {

// Whether `mask` (ceil(V / 32) words) allows token t: bit t % 32 of word t / 32.
inline bool token_allowed(const int32_t* mask, int64_t t) {
  return (static_cast<uint32_t>(mask[t >> 5]) >> (t & 31)) & 1u;
}

// In place on logits F32 [m, V] (host), mask I32 [>= m, ceil(V / 32)]: in each row whose mask allows
// some token of [0, V), every token it does not allow becomes -inf; a row that allows none is left
// as it is (sampling_params.h). Rows run in parallel on `pool` (nullptr: serially).
void apply_token_mask_cpu(const Tensor& logits, const Tensor& mask, ThreadPool* pool);

}  // namespace fg
