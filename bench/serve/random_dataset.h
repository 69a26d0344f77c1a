// bench/serve/random_dataset.h — the `random` dataset of `bench serve`: prompts of uniformly
// random token ids, sent as token arrays so no tokenizer is needed on the client.
//
// Lengths follow vLLM's --random-range-ratio: with ratio r, input and output lengths are drawn
// uniformly from the integers in [N(1-r), N(1+r)] (r = 0: every request is exactly N).
#pragma once

#include <cstdint>
#include <vector>

namespace fg::bench {

struct BenchRequest {
  std::vector<int32_t> prompt;  // token ids, each in [0, vocab_size)
  int64_t output_len = 0;       // max_tokens (ignore_eos makes it the exact output length)
};

struct RandomDatasetSpec {
  int64_t num_prompts = 1000;
  int64_t input_len = 1024;
  int64_t output_len = 128;
  double range_ratio = 0.0;
  int64_t vocab_size = 0;
  uint64_t seed = 0;
};

// Errors name the option that is out of range.
std::vector<BenchRequest> sample_random_requests(const RandomDatasetSpec& spec);

// The inclusive length range [N(1-r), N(1+r)] (floored at 1 token).
struct LengthRange {
  int64_t lo = 0, hi = 0;
};
LengthRange length_range(int64_t n, double range_ratio);

}  // namespace fg::bench
