// backend/cuda/cuda_backend_factory.cpp — the CUDA backend behind backend_factory.h's CUDA-free
// interface.
#include "backend/backend_factory.h"
#include "backend/cuda/cuda_backend.h"
#include "core/cuda/cuda_check.h"

namespace fg {

namespace {

std::unique_ptr<Backend> create_cuda_backend(int device) { return std::make_unique<CudaBackend>(device); }

CudaBackend& as_cuda(Backend& backend, const char* what) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  FG_CHECK(cuda != nullptr, "{} is for the CUDA backend, not the {} backend", what, backend.name());
  return *cuda;
}

std::string set_cuda_attention(Backend& backend, const std::string& name, const AttentionLimits& limits) {
  CudaBackend& cuda = as_cuda(backend, "a GPU attention backend");
  cuda.set_attention(make_attention_backend(name, limits));
  return cuda.attention_backend()->name();
}

void cuda_memory_info(Backend& backend, size_t* free_bytes, size_t* total_bytes) {
  as_cuda(backend, "device memory information");  // the current device is the backend's
  FG_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
}

}  // namespace

GpuBackendFactory cuda_backend_factory() {
  return {&create_cuda_backend, &set_cuda_attention, &cuda_memory_info};
}

}  // namespace fg
