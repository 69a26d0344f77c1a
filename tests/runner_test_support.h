// tests/runner_test_support.h — requests with KV blocks for runner tests: a trivial block pool,
// request state that advances step by step, and poisoned KV caches.
#pragma once

#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "runner/model_runner.h"

namespace fg::test {

// Hands out blocks 1..num_blocks-1 (block 0 is the null block) and never reuses them.
class BlockPool {
 public:
  explicit BlockPool(int64_t num_blocks) : next_(1), end_(num_blocks) {}
  int32_t take() {
    FG_CHECK(next_ < end_, "test block pool exhausted");
    return static_cast<int32_t>(next_++);
  }

 private:
  int64_t next_, end_;
};

// A request: its tokens so far, how many are in the KV cache, and its blocks.
struct TestRequest {
  std::vector<int32_t> tokens;
  int64_t computed = 0;
  std::vector<int32_t> blocks;
  SamplingParams sampling;
  int64_t prompt_len = -1;  // >= 0: tokens[0, prompt_len) are the prompt, the rest the output so far

  // The next `n` uncomputed tokens as a step chunk, growing blocks as needed.
  ScheduledRequest chunk(int64_t n, BlockPool& pool, int64_t block_size) {
    while (static_cast<int64_t>(blocks.size()) * block_size < computed + n) blocks.push_back(pool.take());
    ScheduledRequest s;
    s.token_ids = std::span<const int32_t>(tokens.data() + computed, static_cast<size_t>(n));
    s.num_computed = computed;
    s.block_ids = blocks;
    s.sampling = sampling;
    const size_t prompt = prompt_len < 0 ? tokens.size() : static_cast<size_t>(prompt_len);
    s.prompt_ids = std::span<const int32_t>(tokens.data(), prompt);
    s.output_ids = std::span<const int32_t>(tokens.data() + prompt, tokens.size() - prompt);
    return s;
  }
};

inline void poison_kv_cache(Backend& backend, const KvCache& kv) {
  for (const KvCacheLayer& layer : kv.layers) {
    const std::vector<uint8_t> bytes(layer.k.nbytes(), 0xFF);
    backend.copy_from_host(layer.k, bytes.data());
    backend.copy_from_host(layer.v, bytes.data());
  }
  backend.synchronize();
}

inline std::vector<float> copy_logits(LlamaModel& model, int64_t rows) {
  const Tensor t = model.logits(rows);
  std::vector<float> out(static_cast<size_t>(t.numel()));
  model.backend().copy_to_host(out.data(), t);
  return out;
}

inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace fg::test
