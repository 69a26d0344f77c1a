// core/cuda/cuda_check.h — every CUDA runtime call goes through FG_CUDA_CHECK, which turns a
// failure into an fg::Error naming the call, the error and file:line.
//
// The error is raised from a host-compiled function so that .cu files need not instantiate fmt's
// compile-time format checks, which nvcc cannot evaluate.
#pragma once

#include <cuda_runtime.h>

#include <string>

namespace fg::cuda {
[[noreturn]] void raise_cuda_error(cudaError_t status, const char* call, const char* file, int line);
// Any other failure found in a .cu file (a library's status, e.g. CUTLASS's), as an fg::Error.
[[noreturn]] void raise_error(const std::string& message);
}  // namespace fg::cuda

#define FG_CUDA_CHECK(call)                                                                      \
  do {                                                                                           \
    const cudaError_t fg_cuda_status_ = (call);                                                  \
    if (fg_cuda_status_ != cudaSuccess) ::fg::cuda::raise_cuda_error(fg_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)
