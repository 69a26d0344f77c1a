// backend/cuda/cuda_backend_factory.cpp — the CUDA backend behind backend_factory.h's CUDA-free
// interface, and the choice of GPU attention by name.
#include "attention/cuda/reference_attention.h"
#include "backend/backend_factory.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"

namespace fg {

namespace {

std::unique_ptr<Backend> create_cuda_backend(int device) { return std::make_unique<CudaBackend>(device); }

CudaBackend& as_cuda(Backend& backend, const char* what) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  FG_CHECK(cuda != nullptr, "{} is for the CUDA backend, not the {} backend", what, backend.name());
  return *cuda;
}

std::string set_cuda_attention(Backend& backend, const GpuAttentionSpec& spec) {
  CudaBackend* cuda = &as_cuda(backend, "a GPU attention backend");
  AttentionLimits limits;
  limits.max_tokens = spec.max_tokens;
  limits.max_reqs = spec.max_reqs;
  limits.max_context = spec.max_context;
  limits.num_heads = spec.num_heads;
  limits.num_kv_heads = spec.num_kv_heads;
  limits.head_dim = spec.head_dim;
  limits.block_size = spec.block_size;
  cuda->set_attention(make_cuda_attention(spec.name, limits));
  return cuda->attention_backend()->name();
}

void cuda_memory_info(Backend& backend, size_t* free_bytes, size_t* total_bytes) {
  as_cuda(backend, "device memory information");  // the current device is the backend's
  FG_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
}

}  // namespace

std::unique_ptr<AttentionBackend> make_cuda_attention(const std::string& name, const AttentionLimits& limits) {
  if (name == "reference") return make_reference_attention(limits);
  if (name == "auto") {
    // flash and split_kv where they serve the model (their constructors refuse what their kernels
    // are not built for, e.g. the head dims of the tiny fixture models), else the reference.
    try {
      return make_attention_backend("auto", limits);
    } catch (const Error&) {
      return make_reference_attention(limits);
    }
  }
  return make_attention_backend(name, limits);
}

GpuBackendFactory cuda_backend_factory() {
  return {&create_cuda_backend, &set_cuda_attention, &cuda_memory_info};
}

}  // namespace fg
