// model/rope.cpp — RoPE inverse frequencies (default and llama3) and the cos/sin table.
#include "model/rope.h"

#include <cmath>
#include <numbers>

namespace fg {

namespace {

// Llama 3.1 scaling: long wavelengths are divided by `factor`, short ones kept, and the band
// between is interpolated smoothly.
void apply_llama3_scaling(const RopeConfig& rope, std::vector<float>& inv) {
  const double old_context = static_cast<double>(rope.original_max_position_embeddings);
  const double low_freq_wavelen = old_context / rope.low_freq_factor;
  const double high_freq_wavelen = old_context / rope.high_freq_factor;
  for (float& f : inv) {
    const double freq = f;
    const double wavelen = 2.0 * std::numbers::pi / freq;
    double scaled = wavelen > low_freq_wavelen ? freq / rope.factor : freq;
    const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
    if (medium) {
      const double smooth = (old_context / wavelen - rope.low_freq_factor) / (rope.high_freq_factor - rope.low_freq_factor);
      scaled = (1.0 - smooth) * scaled / rope.factor + smooth * scaled;
    }
    f = static_cast<float>(scaled);
  }
}

}  // namespace

std::vector<float> rope_inverse_frequencies(const RopeConfig& rope, int64_t head_dim) {
  const int64_t half = head_dim / 2;
  std::vector<float> inv(half);
  const float base = static_cast<float>(rope.theta);
  for (int64_t i = 0; i < half; ++i) {
    // transformers: 1 / base ** (arange(0, dim, 2).float() / dim), all in fp32
    float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    inv[i] = 1.0f / static_cast<float>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
  }
  if (rope.type == RopeType::kLlama3) apply_llama3_scaling(rope, inv);
  if (rope.round_inv_freq_to_bf16)
    for (float& f : inv) f = bf16_to_float(float_to_bf16(f));
  return inv;
}

std::vector<float> rope_cos_sin_table(const RopeConfig& rope, int64_t head_dim, int64_t max_positions) {
  const std::vector<float> inv = rope_inverse_frequencies(rope, head_dim);
  const int64_t half = head_dim / 2;
  std::vector<float> table(static_cast<size_t>(max_positions * head_dim));
  for (int64_t p = 0; p < max_positions; ++p) {
    float* row = table.data() + p * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(p) * inv[i];
      row[i] = static_cast<float>(std::cos(static_cast<double>(angle)));
      row[half + i] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
  }
  return table;
}

}  // namespace fg
