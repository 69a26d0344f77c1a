// tests/gpu/gpu_test_support.h — helpers of the GPU test binary: skipping without a device,
// device buffers with poisoned contents, bf16 round trips and the relative-error measure.
//
// Tolerance: kernels read bf16 operands and accumulate in fp32, the CPU oracle computes in fp32
// on the same bf16-rounded inputs, and outputs are rounded to bf16 once (relative 2^-8 = 3.9e-3):
// ||out - ref|| / ||ref|| <= 1e-2 leaves room for that rounding and for reassociation, while any
// indexing or masking error shows as O(1).
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/cuda/cuda_check.h"
#include "core/cuda/device_info.h"
#include "core/dtype.h"
#include "core/tensor.h"
#include "runner/greedy_generator.h"

namespace fg::gpu_test {

// Call first in every GPU test: skips (not fails) on a machine without a CUDA device.
#define FG_REQUIRE_GPU()                                                   \
  do {                                                                     \
    if (::fg::cuda::list_devices().empty()) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

// Owned device memory; freed when the last copy goes.
struct DeviceBuffer {
  std::shared_ptr<void> memory;
  Tensor tensor;
};

inline DeviceBuffer device_alloc(DType dtype, std::initializer_list<int64_t> dims) {
  DeviceBuffer b;
  b.tensor = Tensor(nullptr, dtype, dims, Device::kCuda);
  void* p = nullptr;
  FG_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(b.tensor.nbytes(), 1)));
  b.memory = std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
  b.tensor.data = p;
  return b;
}

// poison and upload finish before they return: they run on the legacy stream, which does not
// order the non-blocking streams the backends launch on, and cudaMemset (and the last DMA of a
// pageable upload) may still be in flight when the call returns. A kernel launched next could
// otherwise run first and have its output overwritten (seen: a quantizer's rows all 0xFF).

// Fills with 0xFF bytes: NaN in bf16/f16/f32, -1 in integers, so unwritten elements show.
inline void poison(const Tensor& t) {
  FG_CUDA_CHECK(cudaMemset(t.data, 0xFF, t.nbytes()));
  FG_CUDA_CHECK(cudaDeviceSynchronize());
}

template <typename T>
void upload(const Tensor& t, const std::vector<T>& host) {
  ASSERT_EQ(host.size() * sizeof(T), t.nbytes());
  FG_CUDA_CHECK(cudaMemcpy(t.data, host.data(), t.nbytes(), cudaMemcpyHostToDevice));
  FG_CUDA_CHECK(cudaDeviceSynchronize());
}

template <typename T>
std::vector<T> download(const Tensor& t) {
  std::vector<T> host(t.nbytes() / sizeof(T));
  FG_CUDA_CHECK(cudaDeviceSynchronize());
  FG_CUDA_CHECK(cudaMemcpy(host.data(), t.data, t.nbytes(), cudaMemcpyDeviceToHost));
  return host;
}

// Random values already representable in bf16, as (bf16 bits, the same values as fp32).
struct Bf16Values {
  std::vector<uint16_t> bits;
  std::vector<float> values;
};
inline Bf16Values random_bf16(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  Bf16Values v;
  v.bits.resize(n);
  v.values.resize(n);
  for (size_t i = 0; i < n; ++i) {
    v.bits[i] = float_to_bf16(dist(rng));
    v.values[i] = bf16_to_float(v.bits[i]);
  }
  return v;
}

inline std::vector<float> bf16_bits_to_float(const std::vector<uint16_t>& bits) {
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = bf16_to_float(bits[i]);
  return out;
}

// The positions (as text; empty when none) where the reference has a clear winner (its best two
// logits more than `margin` of its largest |logit| apart) and the GPU's logits pick another token.
inline std::string top1_mismatches(const std::vector<float>& got, const std::vector<float>& ref, int64_t vocab,
                                   float margin = 0.02f) {
  std::string out;
  const int64_t rows = static_cast<int64_t>(ref.size()) / vocab;
  for (int64_t t = 0; t < rows; ++t) {
    const float* r = ref.data() + t * vocab;
    const float* g = got.data() + t * vocab;
    std::vector<float> sorted(r, r + vocab);
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
    float largest = 0.0f;
    for (int64_t j = 0; j < vocab; ++j) largest = std::max(largest, std::fabs(r[j]));
    if (sorted[0] - sorted[1] <= margin * largest) continue;
    const int32_t want = argmax_lowest_index(r, vocab), have = argmax_lowest_index(g, vocab);
    if (want != have) out += " position " + std::to_string(t) + ": " + std::to_string(have) + " instead of " +
                             std::to_string(want) + ";";
  }
  return out;
}

// ||out - ref|| / ||ref||; NaN (e.g. an unwritten, poisoned element) gives NaN, which fails any <=.
inline double relative_error(const std::vector<float>& out, const std::vector<float>& ref) {
  EXPECT_EQ(out.size(), ref.size());
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < std::min(out.size(), ref.size()); ++i) {
    const double d = static_cast<double>(out[i]) - ref[i];
    diff += d * d;
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

}  // namespace fg::gpu_test
