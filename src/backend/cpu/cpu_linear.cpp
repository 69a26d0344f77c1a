// backend/cpu/cpu_linear.cpp — out = x · Wᵀ + b on the CPU, over BF16, F16 or F32 weights.
//
// Work is split by output feature: each thread converts its weight rows to fp32 once and takes
// their dot product with every token row, so a result depends only on (token row, weight row).
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_math.h"

namespace fg {

void CpuBackend::linear_now(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& out) {
  cpu::require_f32(x, "linear input");
  cpu::require_f32(out, "linear output");
  const int64_t n = x.dim(0), in = x.dim(1), out_features = weight.dim(0);
  FG_CHECK(weight.rank == 2 && weight.dim(1) == in, "linear: weight {} does not take inputs of width {}",
           weight.shape_string(), in);
  FG_ASSERT(out.same_shape({n, out_features}));
  const bool has_bias = bias.data != nullptr;
  if (has_bias) FG_ASSERT(bias.numel() == out_features);
  if (n == 0) return;

  pool_.parallel_for(out_features, [&](int64_t begin, int64_t end) {
    std::vector<float> row(in);
    float b = 0.0f;
    for (int64_t j = begin; j < end; ++j) {
      cpu::load_floats(weight, j * in, in, row.data());
      if (has_bias) cpu::load_floats(bias, j, 1, &b);
      for (int64_t i = 0; i < n; ++i) {
        float acc = cpu::dot(x.as<const float>() + i * in, row.data(), in);
        out.as<float>()[i * out_features + j] = has_bias ? acc + b : acc;
      }
    }
  });
}

}  // namespace fg
