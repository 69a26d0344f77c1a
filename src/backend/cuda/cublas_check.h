// backend/cuda/cublas_check.h — FG_CUBLAS_CHECK: the cuBLASLt counterpart of FG_CUDA_CHECK. A
// failed call becomes an fg::Error naming the call, cuBLASLt's status and file:line.
//
// Like FG_CUDA_CHECK, the error is raised from a host-compiled function so that the macro can be
// used from .cu files, where fmt's compile-time format checks do not compile.
#pragma once

#include <cublasLt.h>

namespace fg::cuda {
[[noreturn]] void raise_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);
}  // namespace fg::cuda

#define FG_CUBLAS_CHECK(call)                                                                         \
  do {                                                                                                \
    const cublasStatus_t fg_cublas_status_ = (call);                                                  \
    if (fg_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                                   \
      ::fg::cuda::raise_cublas_error(fg_cublas_status_, #call, __FILE__, __LINE__);                   \
  } while (0)
