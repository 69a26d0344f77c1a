// bench/serve/random_dataset.cpp — seeded random prompts and lengths.
#include "bench/serve/random_dataset.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/error.h"

namespace fg::bench {

// Truncation at both ends, as vLLM's int(input_len * (1 - r)) and int(input_len * (1 + r)).
LengthRange length_range(int64_t n, double range_ratio) {
  const double lo = std::floor(static_cast<double>(n) * (1.0 - range_ratio));
  const double hi = std::floor(static_cast<double>(n) * (1.0 + range_ratio));
  return {std::max<int64_t>(1, static_cast<int64_t>(lo)), std::max<int64_t>(1, static_cast<int64_t>(hi))};
}

std::vector<BenchRequest> sample_random_requests(const RandomDatasetSpec& spec) {
  FG_CHECK(spec.num_prompts >= 1, "--num-prompts must be at least 1, got {}", spec.num_prompts);
  FG_CHECK(spec.input_len >= 1, "--input-len must be at least 1, got {}", spec.input_len);
  FG_CHECK(spec.output_len >= 1, "--output-len must be at least 1, got {}", spec.output_len);
  // vLLM rejects r >= 1 too: it would allow zero-length prompts.
  FG_CHECK(spec.range_ratio >= 0.0 && spec.range_ratio < 1.0, "--range-ratio must be in [0, 1), got {}",
           spec.range_ratio);
  FG_CHECK(spec.vocab_size >= 1 && spec.vocab_size <= INT32_MAX, "--vocab-size must be in [1, 2^31), got {}",
           spec.vocab_size);
  const LengthRange in = length_range(spec.input_len, spec.range_ratio);
  const LengthRange out = length_range(spec.output_len, spec.range_ratio);
  std::mt19937_64 rng(spec.seed);
  std::uniform_int_distribution<int64_t> input_len(in.lo, in.hi), output_len(out.lo, out.hi);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(spec.vocab_size - 1));
  std::vector<BenchRequest> requests(static_cast<size_t>(spec.num_prompts));
  for (BenchRequest& r : requests) {
    r.prompt.resize(static_cast<size_t>(input_len(rng)));
    r.output_len = output_len(rng);
    for (int32_t& id : r.prompt) id = token(rng);
  }
  return requests;
}

}  // namespace fg::bench
