// model/rope.h — the RoPE angle table of a model, computed the way Hugging Face computes it.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"

namespace fg {

// Inverse frequencies (head_dim / 2 of them) after llama3 scaling where configured.
std::vector<float> rope_inverse_frequencies(const RopeConfig& rope, int64_t head_dim);

// F32 [max_positions, head_dim]: per position, the cos of each frequency's angle, then the sin.
// Angles are float(position) * inv_freq in fp32 like transformers, so positions far into the
// context round the same way the reference does.
std::vector<float> rope_cos_sin_table(const RopeConfig& rope, int64_t head_dim, int64_t max_positions);

}  // namespace fg
