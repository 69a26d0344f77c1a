// tests/engine_model_check.h — the engine over a real model through the full-graph runner,
// shared by the CPU test and the GPU test: 32 requests submitted together (chunked prefill under
// a small token budget, fewer request slots than requests, shared prefixes hitting the prefix
// cache, and a KV pool small enough to preempt) must each produce exactly the tokens of the same
// request run alone, greedy and sampled with a fixed seed.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "engine/engine.h"
#include "runner/model_runner.h"
#include "model/model_loader.h"
#include "test_support.h"

namespace fg::test {

// Gives a backend (created by the caller) what the model needs before it is built, e.g. a GPU
// attention backend sized for the step.
using PrepareBackend = std::function<void(Backend&, const ModelConfig&, int64_t max_tokens, int64_t max_seqs)>;

struct EngineModelFixture {
  ModelConfig config;
  std::unique_ptr<LlamaModel> model;
  KvCache kv;
  std::unique_ptr<ModelRunner> runner;

  EngineModelFixture(Backend& backend, const PrepareBackend& prepare, const std::string& model_dir,
                     int64_t num_blocks, int64_t budget, int64_t max_seqs) {
    LoadOptions load;
    load.round_rope_inv_freq_to_bf16 = true;
    LoadedModel loaded = load_model(model_dir, load, backend);
    config = loaded.config;
    if (prepare) prepare(backend, config, budget, max_seqs);
    model = std::make_unique<LlamaModel>(config, std::move(loaded.weights), backend, budget, max_seqs);
    kv = allocate_kv_cache(backend, config, num_blocks, 16, backend.activation_dtype());
    RunnerOptions ro;
    ro.max_num_tokens = budget;
    ro.max_num_seqs = max_seqs;
    ro.max_model_len = 512;
    ro.capture_sizes = {1, 2, 4, 8, 16, 32, 64};
    runner = std::make_unique<ModelRunner>(*model, kv, ro, [](const std::string&) {});
    runner->capture_graphs();
  }
};

struct EngineTestRequest {
  std::vector<int32_t> prompt;
  int64_t max_tokens;
  SamplingParams sampling;
};

inline std::vector<EngineTestRequest> engine_test_requests(int64_t vocab) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> token(3, static_cast<int32_t>(vocab) - 1);
  std::vector<int32_t> shared(40);
  for (int32_t& t : shared) t = token(rng);
  std::vector<EngineTestRequest> out;
  for (int i = 0; i < 32; ++i) {
    EngineTestRequest r;
    const size_t keep = (i % 3 == 0) ? shared.size() : (i % 3 == 1 ? 17 : 0);
    r.prompt.assign(shared.begin(), shared.begin() + static_cast<std::ptrdiff_t>(keep));
    const int tail = 1 + static_cast<int>(rng() % 90);
    for (int k = 0; k < tail; ++k) r.prompt.push_back(token(rng));
    r.max_tokens = 1 + static_cast<int64_t>(rng() % 24);
    if (i % 2 == 1) {  // sampled, with a fixed seed
      r.sampling.temperature = 0.9f;
      r.sampling.top_k = (i % 4 == 1) ? 40 : 0;
      r.sampling.top_p = 0.95f;
      r.sampling.seed = 1000 + i;
    }
    out.push_back(r);
  }
  return out;
}

inline RequestSpec engine_test_spec(const EngineTestRequest& r, std::vector<int32_t>* sink, bool* done) {
  RequestSpec s;
  s.prompt = r.prompt;
  s.sampling = r.sampling;
  s.has_seed = true;
  s.stop.max_tokens = r.max_tokens;
  s.stop.ignore_eos = true;  // same length every time: easier to read a failure
  s.on_output = [sink, done](const RequestOutput& o) {
    sink->insert(sink->end(), o.token_ids.begin(), o.token_ids.end());
    if (o.finished) *done = true;
  };
  return s;
}

inline EngineOptions engine_test_options(const ModelConfig& c, int64_t budget, int64_t max_seqs) {
  EngineOptions o;
  o.scheduler = {budget, max_seqs};
  o.max_model_len = 512;
  o.vocab_size = c.vocab_size;
  return o;
}

// `make_backend` is called twice: for the batched run and for the solo runs.
inline void expect_together_equals_alone(const std::function<std::unique_ptr<Backend>()>& make_backend,
                                         const PrepareBackend& prepare, const std::string& model_dir) {
  constexpr int64_t kBudget = 64, kSeqs = 16;
  // 24 usable blocks of 16 tokens: 384 tokens of KV for 32 requests of up to 154 tokens, so
  // requests wait for blocks and running ones are preempted.
  std::unique_ptr<Backend> backend = make_backend();
  EngineModelFixture together(*backend, prepare, model_dir, 25, kBudget, kSeqs);
  const std::vector<EngineTestRequest> requests = engine_test_requests(together.config.vocab_size);

  KvBlockManager blocks({25, 16, /*enable_prefix_caching=*/true});
  Engine engine(*together.runner, blocks, nullptr, engine_test_options(together.config, kBudget, kSeqs));
  std::vector<std::vector<int32_t>> got(requests.size());
  const std::unique_ptr<bool[]> done(new bool[requests.size()]());
  for (size_t i = 0; i < requests.size(); ++i) engine.submit(engine_test_spec(requests[i], &got[i], &done[i]));
  while (engine.step()) blocks.check_invariants();
  EXPECT_EQ(blocks.num_free_blocks(), blocks.num_usable_blocks());
  const EngineStats stats = engine.stats();
  EXPECT_GT(stats.graph_steps, 0);
  EXPECT_GT(engine.num_preemptions(), 0) << "the pool was meant to force preemption";
  EXPECT_GT(blocks.stats().prefix_hit_tokens, 0) << "the shared prefixes were meant to hit";

  // Alone: one request at a time, a pool that holds it, no prefix cache.
  std::unique_ptr<Backend> solo_backend = make_backend();
  EngineModelFixture alone(*solo_backend, prepare, model_dir, 12, kBudget, kSeqs);
  for (size_t i = 0; i < requests.size(); ++i) {
    KvBlockManager solo_blocks({12, 16, false});
    Engine solo(*alone.runner, solo_blocks, nullptr, engine_test_options(alone.config, kBudget, kSeqs));
    std::vector<int32_t> expected;
    bool finished = false;
    solo.submit(engine_test_spec(requests[i], &expected, &finished));
    while (solo.step()) {
    }
    ASSERT_TRUE(finished);
    ASSERT_TRUE(done[i]) << "request " << i;
    EXPECT_EQ(got[i], expected) << "request " << i
                                << (requests[i].sampling.temperature > 0 ? " (sampled)" : " (greedy)");
  }
}

}  // namespace fg::test
