// core/host_buffer.h — an owned, 64-byte aligned block of host memory.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>

#include "core/error.h"
#include "core/tensor.h"

namespace fg {

class HostBuffer {
 public:
  HostBuffer() = default;
  explicit HostBuffer(size_t bytes) : size_(bytes) {
    if (bytes == 0) return;
    size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    FG_CHECK(p != nullptr, "out of host memory allocating {} bytes", bytes);
    data_.reset(static_cast<std::byte*>(p));
  }

  std::byte* data() const { return data_.get(); }
  size_t size() const { return size_; }

  // A tensor view over the start of this buffer.
  Tensor tensor(DType dtype, std::initializer_list<int64_t> dims) const {
    Tensor t(data_.get(), dtype, dims, Device::kHost);
    FG_ASSERT(t.nbytes() <= size_);
    return t;
  }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> data_;
  size_t size_ = 0;
};

}  // namespace fg
