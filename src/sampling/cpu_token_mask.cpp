// sampling/cpu_token_mask.cpp — the token mask, one row at a time, word by word.
#include "sampling/cpu_token_mask.h"

#include <limits>

#include "sampling/sampling_params.h"

namespace fg {

void apply_token_mask_cpu(const Tensor& logits, const Tensor& mask, ThreadPool* pool) {
  check_token_mask_args(logits, mask, Device::kHost);
  const int64_t rows = logits.dim(0), vocab = logits.dim(1), words = mask.dim(1);
  // The bits of the last word that name tokens of the vocabulary; the others are ignored.
  const uint32_t last_bits = vocab % 32 == 0 ? ~0u : (1u << (vocab % 32)) - 1u;
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int32_t* m = mask.as<const int32_t>() + r * words;
      bool all = true, any = false;
      for (int64_t w = 0; w < words; ++w) {
        const uint32_t valid = w + 1 == words ? last_bits : ~0u;
        const uint32_t bits = static_cast<uint32_t>(m[w]) & valid;
        all = all && bits == valid;
        any = any || bits != 0;
      }
      if (all || !any) continue;  // nothing masked, or nothing allowed (left as it is)
      float* row = logits.as<float>() + r * vocab;
      for (int64_t t = 0; t < vocab; ++t)
        if (!token_allowed(m, t)) row[t] = -std::numeric_limits<float>::infinity();
    }
  };
  if (pool != nullptr) {
    pool->parallel_for(rows, body);
  } else {
    body(0, rows);
  }
}

}  // namespace fg
