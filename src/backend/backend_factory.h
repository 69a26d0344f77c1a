// backend/backend_factory.h — how code built without CUDA (the CLI commands in fullgraph_lib)
// gets a GPU backend, without seeing a CUDA header.
//
// The choice is explicit rather than link-time magic: fullgraph_cuda defines
// cuda_backend_factory(), and main.cpp, compiled with FULLGRAPH_HAVE_CUDA where that library is
// linked, hands its result to the commands that can run on a GPU. A build without CUDA hands them
// an empty factory, and asking it for a GPU backend fails with "this build has no CUDA backend".
// (A weak symbol or a static registrar would depend on which archive members the linker pulls in.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace fg {

struct GpuBackendFactory {
  // A backend on CUDA device `device`, without attention yet (it needs the model config).
  std::unique_ptr<Backend> (*create)(int device) = nullptr;
  // Gives a backend made by `create` the attention backend called `name` (auto | flash | split_kv |
  // reference; make_attention_backend) for steps within `limits`; returns the name of the one
  // chosen (auto may choose the reference).
  std::string (*set_attention)(Backend& backend, const std::string& name, const AttentionLimits& limits) = nullptr;
  // Bytes of the backend's device memory free now, and in all (cudaMemGetInfo).
  void (*memory_info)(Backend& backend, size_t* free_bytes, size_t* total_bytes) = nullptr;

  bool available() const { return create != nullptr && set_attention != nullptr; }
};

// Defined in fullgraph_cuda only: reference it under #ifdef FULLGRAPH_HAVE_CUDA.
GpuBackendFactory cuda_backend_factory();

}  // namespace fg
