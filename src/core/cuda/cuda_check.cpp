// core/cuda/cuda_check.cpp — the message of a failed CUDA call.
#include "core/cuda/cuda_check.h"

#include "core/error.h"

namespace fg::cuda {

void raise_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  fail("CUDA error {} ({}) in {} at {}:{}", cudaGetErrorName(status), cudaGetErrorString(status), call, file, line);
}

void raise_error(const std::string& message) { throw Error(message); }

}  // namespace fg::cuda
