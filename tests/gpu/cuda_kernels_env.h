// tests/gpu/cuda_kernels_env.h — what the CudaBackend op tests share (test_cuda_kernels.cpp,
// test_cuda_linear.cpp): both backends with fresh random numbers per test, host views for the CPU
// oracle, and device values read back as fp32.
//
// Tolerance: relative error <= 1e-2, as gpu_test_support.h explains.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "gpu/gpu_test_support.h"

namespace fg::cuda_kernel_test {

using gpu_test::Bf16Values;
using gpu_test::relative_error;

constexpr double kTolerance = 1e-2;
constexpr uint16_t kPoisonBf16 = 0xFFFF;  // what gpu_test::poison leaves in a bf16 element

// Both backends, fresh random numbers per test, and the device memory the test allocated.
struct Env {
  CudaBackend gpu;
  CpuBackend cpu;
  std::mt19937 rng{12345};
  std::vector<std::shared_ptr<void>> keep;

  Tensor alloc(DType dtype, std::initializer_list<int64_t> dims) {
    Allocation a = gpu.allocate(dtype, dims);
    keep.push_back(a.memory);
    return a.tensor;
  }
  // A device BF16 tensor holding v, which must have dims' element count.
  Tensor bf16(const Bf16Values& v, std::initializer_list<int64_t> dims) {
    Tensor t = alloc(DType::kBF16, dims);
    gpu_test::upload(t, v.bits);
    return t;
  }
  template <typename T>
  Tensor device(DType dtype, const std::vector<T>& v, std::initializer_list<int64_t> dims) {
    Tensor t = alloc(dtype, dims);
    gpu_test::upload(t, v);
    return t;
  }
  Tensor poisoned(DType dtype, std::initializer_list<int64_t> dims) {
    Tensor t = alloc(dtype, dims);
    gpu_test::poison(t);
    return t;
  }
  Bf16Values random(size_t n, float scale = 1.0f) { return gpu_test::random_bf16(n, rng, scale); }
  // Values near `center` (norm weights), still bf16-representable.
  Bf16Values around(size_t n, float center, float scale) {
    Bf16Values v = random(n, scale);
    for (size_t i = 0; i < n; ++i) {
      v.bits[i] = float_to_bf16(center + v.values[i]);
      v.values[i] = bf16_to_float(v.bits[i]);
    }
    return v;
  }
};

// The gate/up shapes the gated-MLP tests sweep: full passes of the gated streamed kernel (4096 rows,
// one chunk of k), a last, partial pass with k past the last whole chunk (4104 rows, k = 520), and
// a span too small for the streamed kernel (512 rows). `fused`: gated_linear_applies on an H200.
struct GatedCase {
  int64_t intermediate, in;
  bool fused;
};
inline std::vector<GatedCase> gated_cases() { return {{4096, 256, true}, {4104, 520, true}, {512, 256, false}}; }

// A host tensor over `values` (the CPU oracle's view of the same numbers).
inline Tensor host(std::vector<float>& values, std::initializer_list<int64_t> dims) {
  return Tensor(values.data(), DType::kF32, dims);
}
inline Tensor host_bf16(std::vector<uint16_t>& bits, std::initializer_list<int64_t> dims) {
  return Tensor(bits.data(), DType::kBF16, dims);
}

// A step's per-token RoPE and cache inputs: random positions in [0, max_positions), and distinct
// slots of a cache of `slots` outside its null block (the first block_size slots) in random
// order, with every pad_every-th token from first_padded on padded (slot -1).
struct TokenSlots {
  std::vector<int32_t> positions;
  std::vector<int64_t> slot_mapping;
};
inline TokenSlots random_token_slots(std::mt19937& rng, int64_t n, int64_t max_positions, int64_t slots,
                                     int64_t block_size, int64_t first_padded, int64_t pad_every) {
  TokenSlots t{std::vector<int32_t>(n), {}};
  for (auto& p : t.positions) p = static_cast<int32_t>(rng() % max_positions);
  std::vector<int64_t> free_slots(slots - block_size);
  std::iota(free_slots.begin(), free_slots.end(), block_size);
  std::shuffle(free_slots.begin(), free_slots.end(), rng);
  t.slot_mapping.assign(free_slots.begin(), free_slots.begin() + n);
  for (int64_t i = first_padded; i < n; i += pad_every) t.slot_mapping[i] = -1;
  return t;
}

// The cache rows of the tokens that own a slot (slot_mapping[i] >= 0), element by element as fp32:
// the GPU's (BF16 bits, [slots, row_size]) and the CPU oracle's.
struct CacheRows {
  std::vector<float> gpu, cpu;
};
inline CacheRows written_cache_rows(const std::vector<uint16_t>& gpu_bits, const std::vector<float>& cpu,
                                    const std::vector<int64_t>& slot_mapping, int64_t row_size) {
  CacheRows rows;
  for (int64_t slot : slot_mapping) {
    if (slot < 0) continue;
    for (int64_t j = 0; j < row_size; ++j) {
      rows.gpu.push_back(bf16_to_float(gpu_bits[slot * row_size + j]));
      rows.cpu.push_back(cpu[slot * row_size + j]);
    }
  }
  return rows;
}

// A device tensor's values as fp32 (BF16 or F32).
inline std::vector<float> floats(const Tensor& t) {
  if (t.dtype == DType::kF32) return gpu_test::download<float>(t);
  return gpu_test::bf16_bits_to_float(gpu_test::download<uint16_t>(t));
}

inline std::vector<float> slice(const std::vector<float>& v, size_t begin, size_t count) {
  return std::vector<float>(v.begin() + begin, v.begin() + begin + count);
}

}  // namespace fg::cuda_kernel_test
