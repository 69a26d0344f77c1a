// tests/runner_test_support.h — what the CPU and the CUDA runner tests share: a trivial block
// pool, request state that advances step by step, poisoned KV caches, and RunnerTest, the fixture
// base that builds a runner over a model on either backend and runs a step both through graphs
// and eagerly. No CUDA header: the GPU tests pick their backend and attention themselves.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/backend_factory.h"
#include "backend/cpu/cpu_backend.h"
#include "model/model_loader.h"
#include "runner/model_runner.h"
#include "test_support.h"

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
  std::vector<std::pair<int32_t, float>> logit_bias;
  std::vector<int32_t> token_mask;  // empty: unconstrained

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
    s.logit_bias = logit_bias;
    s.token_mask = token_mask;
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

// Loads fixture `name` as its transformers references were made: rope inverse frequencies rounded
// to bf16 (see test_model_reference.cpp).
inline LoadedModel load_fixture(const std::string& name, Backend& backend) {
  LoadOptions load;
  load.round_rope_inv_freq_to_bf16 = true;
  return load_model(model_fixture(name), load, backend);
}

// A gtest-friendly name for a fixture model ('-' is not allowed in test names).
inline std::string fixture_test_name(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// One step run through execute() and through execute_eager(), with the logits each left behind.
struct GraphAndEager {
  StepResult graph, eager;
  std::vector<float> graph_logits, eager_logits;
};

// The base of the runner test fixtures. A CPU test calls start_cpu_runner(); a GPU test sets
// backend_ and loaded_, gives its backend an attention for the model's shape, then start_runner().
template <typename Param>
class RunnerTest : public ::testing::TestWithParam<Param> {
 protected:
  static constexpr int64_t kBlockSize = 16;

  // The model, a KV cache of `num_blocks` blocks poisoned so that block 0 and unused blocks read
  // as NaN, a block pool over it, and the runner with its graphs captured.
  void start_runner(const RunnerOptions& options, int64_t num_blocks, DType kv_dtype) {
    model_ = std::make_unique<LlamaModel>(loaded_.config, loaded_.weights, *backend_, options.max_num_tokens,
                                          options.max_num_seqs);
    kv_ = allocate_kv_cache(*backend_, loaded_.config, num_blocks, kBlockSize, kv_dtype);
    poison_kv_cache(*backend_, kv_);
    pool_ = std::make_unique<BlockPool>(num_blocks);
    runner_ = std::make_unique<ModelRunner>(*model_, kv_, options, [](const std::string&) {});
    runner_->capture_graphs();
  }

  // The CPU tests' runner: fixture model `fixture` on the CPU backend, an F32 KV cache.
  void start_cpu_runner(const std::string& fixture, const RunnerOptions& options, int64_t num_blocks) {
    backend_ = std::make_unique<CpuBackend>();
    loaded_ = load_fixture(fixture, *backend_);
    start_runner(options, num_blocks, DType::kF32);
  }

  // What a GPU backend's attention must serve for a runner with `options` over loaded_.
  AttentionLimits attention_limits_for(const RunnerOptions& options, int64_t max_context) const {
    return attention_limits(loaded_.config, options.max_num_tokens, options.max_num_seqs, max_context, kBlockSize);
  }

  int64_t vocab() const { return loaded_.config.vocab_size; }

  // A request of min_len..max_len random tokens, none of them computed yet.
  TestRequest random_request(std::mt19937& rng, int64_t min_len, int64_t max_len) const {
    TestRequest r;
    const int64_t len = std::uniform_int_distribution<int64_t>(min_len, max_len)(rng);
    std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(vocab()) - 1);
    for (int64_t i = 0; i < len; ++i) r.tokens.push_back(token(rng));
    return r;
  }

  // A request with a prompt of prompt_len tokens and `generated` output tokens, all but the last
  // `keep` tokens already in the KV cache. Outputs repeat a few ids so that counts exceed 1.
  TestRequest request(std::mt19937& rng, int64_t prompt_len, int64_t generated, int64_t keep, SamplingParams p) {
    TestRequest r;
    std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(vocab()) - 1);
    for (int64_t i = 0; i < prompt_len; ++i) r.tokens.push_back(token(rng));
    const int32_t base = token(rng) % static_cast<int32_t>(vocab() - 8);
    for (int64_t i = 0; i < generated; ++i) r.tokens.push_back(base + static_cast<int32_t>(rng() % 8));
    r.prompt_len = prompt_len;
    const int64_t n = static_cast<int64_t>(r.tokens.size()) - keep;
    if (n > 0) {  // the earlier tokens, with neutral sampling (their sampled token is not used)
      runner_->execute_eager({next_chunk(r, n)});
      r.computed = n;
    }
    r.sampling = p;
    return r;
  }

  ScheduledRequest next_chunk(TestRequest& r, int64_t n) { return r.chunk(n, *pool_, kBlockSize); }

  // Chunked prefill of all but the last `keep` tokens of `r`, eagerly, in steps of at most 128
  // tokens (every runner test allows steps of 128 tokens).
  void prefill(TestRequest& r, int64_t keep) {
    while (static_cast<int64_t>(r.tokens.size()) - keep - r.computed > 0) {
      const int64_t n = std::min<int64_t>(static_cast<int64_t>(r.tokens.size()) - keep - r.computed, 128);
      runner_->execute_eager({next_chunk(r, n)});
      r.computed += n;
    }
  }

  // Runs `chunks` through execute() (graph where a bucket holds it) and through the unpadded eager
  // path, with the activations and step buffers poisoned before each; expects identical logits
  // bits and sampled ids.
  GraphAndEager run_graph_and_eager(const std::vector<ScheduledRequest>& chunks, const std::string& what) {
    const int64_t reqs = static_cast<int64_t>(chunks.size());
    GraphAndEager out;
    model_->fill_activations(0xFF);
    runner_->poison_step_buffers();
    out.graph = runner_->execute(chunks);
    out.graph_logits = copy_logits(*model_, reqs);
    model_->fill_activations(0xFF);
    runner_->poison_step_buffers();
    out.eager = runner_->execute_eager(chunks);
    out.eager_logits = copy_logits(*model_, reqs);
    EXPECT_TRUE(bitwise_equal(out.graph_logits, out.eager_logits)) << what << " bucket " << out.graph.bucket.to_string();
    EXPECT_EQ(out.graph.sampled, out.eager.sampled) << what;
    return out;
  }

  // run_graph_and_eager, and no poisoned value reached the logits.
  StepResult expect_graph_equals_eager(const std::vector<ScheduledRequest>& chunks, const std::string& what) {
    GraphAndEager step = run_graph_and_eager(chunks, what);
    int64_t bad = 0;
    for (float x : step.eager_logits) bad += !std::isfinite(x);
    EXPECT_EQ(bad, 0) << what << ": poisoned values reached the logits";
    return step.graph;
  }

  // Uniform decode at every batch size from 1 to `num_requests`, over requests of 2..max_len
  // tokens (all but the last prefilled), graph against eager; the results by batch size - 1.
  std::vector<StepResult> decode_at_every_batch_size(std::mt19937& rng, int64_t num_requests, int64_t max_len) {
    std::vector<TestRequest> requests;
    for (int64_t i = 0; i < num_requests; ++i) {
      requests.push_back(random_request(rng, 2, max_len));  // contexts cross block boundaries
      prefill(requests.back(), 1);
    }
    std::vector<StepResult> results;
    for (int64_t batch = 1; batch <= num_requests; ++batch) {
      std::vector<ScheduledRequest> chunks;
      for (int64_t r = 0; r < batch; ++r) chunks.push_back(next_chunk(requests[r], 1));
      results.push_back(expect_graph_equals_eager(chunks, "decode batch " + std::to_string(batch)));
    }
    return results;
  }

  // A mixed prefill+decode step: its requests and their chunks.
  struct MixedBatch {
    std::vector<TestRequest> requests;  // owns the tokens and blocks the chunks point at
    std::vector<ScheduledRequest> chunks;
    int64_t tokens = 0;
    bool uniform = true;  // every chunk a single token
  };

  // Round `round` of a mixed-batch test: 1 to 3 prefill chunks (1 token in round 0, 300 in round 1,
  // 1..300 after) behind up to `cached_prefix` prompt tokens already in the KV cache, beside 0 to
  // 6 decodes of contexts up to `max_decode_len`.
  MixedBatch mixed_batch(std::mt19937& rng, int round, int64_t cached_prefix, int64_t max_decode_len) {
    MixedBatch b;
    std::vector<int64_t> chunk_lens;
    const int num_prefills = std::uniform_int_distribution<int>(1, 3)(rng);
    const int num_decodes = std::uniform_int_distribution<int>(0, 6)(rng);
    for (int i = 0; i < num_prefills; ++i) {
      const int64_t chunk = round < 2 ? (round == 0 ? 1 : 300) : std::uniform_int_distribution<int64_t>(1, 300)(rng);
      b.requests.push_back(random_request(rng, chunk, chunk + cached_prefix));
      prefill(b.requests.back(), chunk);  // an earlier part of the prompt is already cached
      chunk_lens.push_back(chunk);
    }
    for (int i = 0; i < num_decodes; ++i) {
      b.requests.push_back(random_request(rng, 1, max_decode_len));
      prefill(b.requests.back(), 1);
      chunk_lens.push_back(1);
    }
    for (size_t i = 0; i < b.requests.size(); ++i) {
      b.chunks.push_back(next_chunk(b.requests[i], chunk_lens[i]));
      b.tokens += chunk_lens[i];
      b.uniform = b.uniform && chunk_lens[i] == 1;
    }
    return b;
  }

  // The logits of every position of `ids`, one decode step each; every step is expected to
  // replay a graph.
  std::vector<float> logits_of_every_position(const std::vector<int32_t>& ids) {
    TestRequest r;
    r.tokens = ids;
    std::vector<float> got;
    for (size_t t = 0; t < ids.size(); ++t) {
      StepResult step = runner_->execute({next_chunk(r, 1)});
      EXPECT_TRUE(step.replayed);
      ++r.computed;
      const auto row = copy_logits(*model_, 1);
      got.insert(got.end(), row.begin(), row.end());
    }
    return got;
  }

  std::unique_ptr<Backend> backend_;
  LoadedModel loaded_;
  std::unique_ptr<LlamaModel> model_;
  KvCache kv_;
  std::unique_ptr<BlockPool> pool_;
  std::unique_ptr<ModelRunner> runner_;
};

}  // namespace fg::test
