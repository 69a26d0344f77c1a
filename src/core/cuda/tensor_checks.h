// core/cuda/tensor_checks.h — the host-side argument checks of CudaBackend's ops: where a
// tensor lives, its dtype and its alignment, with messages that name the op's tensor; and the
// BF16 pointer the launchers take of a checked tensor. Host code only (.cpp files): fmt's format
// checks do not compile under nvcc.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "core/error.h"
#include "core/tensor.h"

namespace fg::cuda {

inline void require_device(const Tensor& t, const char* what) {
  FG_CHECK(t.device == Device::kCuda, "cuda backend: {} {} is not in device memory", what, t.shape_string());
}

// An activation, index or table tensor of the given dtype, in device memory.
inline void require(const Tensor& t, DType dtype, const char* what) {
  require_device(t, what);
  FG_CHECK(t.dtype == dtype, "cuda backend: {} must be {}, got {}", what, dtype_name(dtype), dtype_name(t.dtype));
}

// A model weight: only BF16 runs on the GPU (the loader converts F16 and F32 checkpoints, see
// CudaBackend::weight_dtype; this catches weights made some other way).
inline void require_weight(const Tensor& t, const char* what) {
  require_device(t, what);
  FG_CHECK(t.dtype == DType::kBF16, "cuda backend: {} {} is {}; the CUDA backend runs BF16 weights only", what,
           t.shape_string(), dtype_name(t.dtype));
}

// Kernels move 16 bytes at a time.
inline void require_aligned16(const Tensor& t, const char* what) {
  FG_CHECK(reinterpret_cast<uintptr_t>(t.data) % 16 == 0, "cuda backend: {} is not 16-byte aligned", what);
}

// Whether `next` starts where `t` ends in memory, of the same dtype and device: parts a linear
// group may run as one matmul.
inline bool follows(const Tensor& t, const Tensor& next) {
  return static_cast<const char*>(t.data) + t.nbytes() == next.data && t.dtype == next.dtype &&
         t.device == next.device;
}

// A checked BF16 tensor's data, as the launchers take it.
inline __nv_bfloat16* bf16_ptr(const Tensor& t) { return static_cast<__nv_bfloat16*>(t.data); }

}  // namespace fg::cuda
