// core/tensor.h — a non-owning, row-major view of a tensor in host or device memory.
//
// Tensors carry their shape so that kernels take their launch sizes from it; what owns the memory
// (an mmap of a checkpoint, a host buffer, a device arena) lives elsewhere and outlives the view.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/dtype.h"
#include "core/error.h"

namespace fg {

enum class Device : uint8_t { kHost, kCuda };

struct Tensor {
  static constexpr int kMaxRank = 4;

  void* data = nullptr;
  DType dtype = DType::kF32;
  Device device = Device::kHost;
  int rank = 0;
  std::array<int64_t, kMaxRank> shape{};

  Tensor() = default;
  Tensor(void* data_, DType dtype_, std::initializer_list<int64_t> dims, Device device_ = Device::kHost)
      : data(data_), dtype(dtype_), device(device_) {
    FG_ASSERT(dims.size() <= kMaxRank);
    for (int64_t d : dims) shape[rank++] = d;
  }

  bool defined() const { return data != nullptr || numel() == 0; }
  int64_t dim(int i) const {
    FG_ASSERT(i >= 0 && i < rank);
    return shape[i];
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= shape[i];
    return n;
  }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  // Elements per index of the first dimension.
  int64_t row_numel() const { return rank == 0 ? 1 : numel() / (shape[0] == 0 ? 1 : shape[0]); }

  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }

  // Rows [begin, begin + count) of the first dimension.
  Tensor rows(int64_t begin, int64_t count) const {
    FG_ASSERT(rank >= 1 && begin >= 0 && count >= 0 && begin + count <= shape[0]);
    Tensor out = *this;
    out.data = static_cast<char*>(data) + static_cast<size_t>(begin * row_numel()) * dtype_size(dtype);
    out.shape[0] = count;
    return out;
  }

  // Same memory, new shape with the same element count.
  Tensor view(std::initializer_list<int64_t> dims) const {
    Tensor out(data, dtype, dims, device);
    FG_ASSERT(out.numel() == numel());
    return out;
  }

  bool same_shape(std::initializer_list<int64_t> dims) const {
    if (static_cast<int>(dims.size()) != rank) return false;
    int i = 0;
    for (int64_t d : dims)
      if (shape[i++] != d) return false;
    return true;
  }

  std::string shape_string() const;
};

}  // namespace fg
