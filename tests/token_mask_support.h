// tests/token_mask_support.h — token masks for tests (sampling_params.h, item 0): random masks
// allowing a given number of tokens, the bit test, and a row masked by the definition.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "sampling/sampling_params.h"

namespace fg::test {

inline bool mask_allows(const std::vector<int32_t>& mask, int64_t t) {
  return (static_cast<uint32_t>(mask[static_cast<size_t>(t >> 5)]) >> (t & 31)) & 1u;
}

// A mask over `vocab` tokens allowing exactly `allowed` (>= 1) distinct random ones. The bits of the
// last word past the vocabulary are set: they name no token, and every reader must ignore them.
inline std::vector<int32_t> random_token_mask(std::mt19937& rng, int64_t vocab, int64_t allowed) {
  std::vector<int32_t> mask(static_cast<size_t>(token_mask_words(vocab)), 0);
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  for (int64_t i = 0; i < std::min(allowed, vocab); ++i) {
    const int32_t t = ids[static_cast<size_t>(i)];
    mask[static_cast<size_t>(t >> 5)] |= static_cast<int32_t>(1u << (t & 31));
  }
  if (vocab % 32 != 0) mask.back() |= static_cast<int32_t>(~((1u << (vocab % 32)) - 1u));
  return mask;
}

// Row `row` of `vocab` logits as the mask leaves them: -inf where it does not allow the token
// (unless it allows none, which leaves the row as it is).
inline std::vector<float> masked_row(const float* row, int64_t vocab, const std::vector<int32_t>& mask) {
  std::vector<float> out(row, row + vocab);
  if (mask.empty()) return out;
  bool any = false;
  for (int64_t t = 0; t < vocab; ++t) any = any || mask_allows(mask, t);
  if (!any) return out;
  for (int64_t t = 0; t < vocab; ++t)
    if (!mask_allows(mask, t)) out[static_cast<size_t>(t)] = -std::numeric_limits<float>::infinity();
  return out;
}

}  // namespace fg::test
