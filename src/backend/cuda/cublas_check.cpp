// backend/cuda/cublas_check.cpp — the message of a failed cuBLASLt call.
#include "backend/cuda/cublas_check.h"

#include "core/error.h"

namespace fg::cuda {

void raise_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  fail("cuBLASLt error {} ({}) in {} at {}:{}", cublasLtGetStatusName(status), cublasLtGetStatusString(status), call,
       file, line);
}

}  // namespace fg::cuda
