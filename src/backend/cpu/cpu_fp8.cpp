// backend/cpu/cpu_fp8.cpp — the CPU reference of FP8 activation rounding (Backend::fp8_round).
//
// The arithmetic is torch's, step for step, so that the reference fixtures' wrapped linears
// (scripts/fp8/make_fp8_fixtures.py) and this op round every element to the same e4m3 value:
// s = amax / 448 in fp32, x / s in fp32, clamp, round to nearest even, times s in fp32.
#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_math.h"

namespace fg {

void CpuBackend::fp8_round_now(const Tensor& x, std::optional<float> static_scale, const Tensor& out) {
  cpu::require_f32(x, "fp8_round input");
  cpu::require_f32(out, "fp8_round output");
  FG_CHECK(x.rank == 2 && out.same_shape({x.dim(0), x.dim(1)}), "fp8_round: input {} and output {} differ",
           x.shape_string(), out.shape_string());
  FG_CHECK(!static_scale || (std::isfinite(*static_scale) && *static_scale > 0.0f),
           "fp8_round: the static input scale must be positive and finite, got {}", static_scale.value_or(0.0f));
  const int64_t n = x.dim(0), width = x.dim(1);
  pool_.parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float* row = x.as<const float>() + i * width;
      float* dst = out.as<float>() + i * width;
      float scale;
      if (static_scale) {
        scale = *static_scale;
      } else {
        float amax = 0.0f;
        for (int64_t j = 0; j < width; ++j) amax = std::fmax(amax, std::fabs(row[j]));
        scale = amax / kE4M3Max;
        if (scale == 0.0f) scale = 1.0f;
      }
      for (int64_t j = 0; j < width; ++j) {
        const float scaled = std::fmin(std::fmax(row[j] / scale, -kE4M3Max), kE4M3Max);
        dst[j] = e4m3_to_float(float_to_e4m3(scaled)) * scale;
      }
    }
  });
}

}  // namespace fg
