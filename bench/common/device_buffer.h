// bench/common/device_buffer.h — device memory for the benchmarks that drive kernels without a
// backend (attention, sampling): a typed array that frees itself, filled from the host.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include "core/cuda/cuda_check.h"

namespace fg::bench {

template <typename T>
class DeviceArray {
 public:
  // `count` elements, uninitialized (at least one, so that an empty array still has an address).
  explicit DeviceArray(size_t count) : count_(count) {
    void* p = nullptr;
    FG_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(T)));
    data_.reset(static_cast<T*>(p));
  }

  T* get() const { return data_.get(); }
  size_t size() const { return count_; }

  // Copies `host` (at most size() elements) to the front of the array; synchronous.
  void upload(const std::vector<T>& host) {
    FG_CUDA_CHECK(cudaMemcpy(data_.get(), host.data(), std::min(host.size(), count_) * sizeof(T),
                             cudaMemcpyHostToDevice));
  }
  void fill(T value) { upload(std::vector<T>(count_, value)); }

 private:
  struct Free {
    void operator()(T* p) const { cudaFree(p); }  // unchecked: a destructor must not throw
  };
  std::unique_ptr<T, Free> data_;
  size_t count_;
};

// A device copy of `host`.
template <typename T>
DeviceArray<T> device_copy(const std::vector<T>& host) {
  DeviceArray<T> a(host.size());
  a.upload(host);
  return a;
}

}  // namespace fg::bench
