// tests/test_prompt_logprobs.cpp — vLLM's prompt_logprobs through the engine and the full-graph
// runner on the CPU backend: a request's first delta carries, for every prompt token after the
// first, its raw logprob given the tokens before it, its rank and the top k, equal bit for bit to the
// definition (sampling_params.h, item 4) computed here from one forward pass over the whole prompt;
// under chunked prefill (a budget of 64 tokens for a prompt of 150), and with a prompt whose
// prefix another request left in the prefix cache (prompt logprobs need every position, so the
// request computes its whole prompt). What it generates is what it generates without them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "backend/cpu/cpu_backend.h"
#include "engine_model_check.h"
#include "runner/step_builder.h"
#include "sampling/cpu_logprobs.h"
#include "sampling/sampling_math.h"

namespace fg {
namespace {

// The definition: row p of one forward over the whole `prompt`, by a model of the same weights
// sized for it, gives token p + 1's logprob and the top k.
std::vector<TokenLogprobs> reference(const std::string& dir, Backend& backend, const std::vector<int32_t>& prompt,
                                     int32_t k) {
  const int64_t T = static_cast<int64_t>(prompt.size()), block = 16;
  LoadOptions load;
  load.round_rope_inv_freq_to_bf16 = true;  // as the fixture's model
  LoadedModel loaded = load_model(dir, load, backend);
  LlamaModel model(loaded.config, std::move(loaded.weights), backend, T, T);
  const int64_t V = model.config().vocab_size;
  const int64_t blocks = (T + block - 1) / block;
  KvCache kv = allocate_kv_cache(backend, model.config(), blocks + 1, block, DType::kF32);
  std::vector<int32_t> ids(static_cast<size_t>(blocks));
  std::iota(ids.begin(), ids.end(), 1);
  DeviceStep d = upload_step(backend, {test::reference_request(prompt, 0, ids, true)}, block, blocks);
  const Tensor logits = model.forward(d.views.inputs, kv);
  std::vector<TokenLogprobs> out;
  for (int64_t p = 0; p + 1 < T; ++p) {
    const float* row = logits.as<const float>() + p * V;
    const RawLogprobRow lp = raw_logprobs_row(row, V, k);
    TokenLogprobs t;
    t.logprob = sampling::token_logprob(row[prompt[p + 1]], lp.logit_max, lp.mass);
    t.top = lp.top;
    t.rank = 1 + std::count_if(row, row + V, [&](float x) { return x > row[prompt[p + 1]]; });
    out.push_back(t);
  }
  return out;
}

TEST(PromptLogprobs, FirstDeltaCarriesEveryPromptTokensLogprobAsDefined) {
  CpuBackend backend;
  constexpr int64_t kBudget = 64, kSeqs = 4;  // passes of 4 rows
  const std::string dir = test::testdata_dir() + "/e2e/tiny-llama2tok";
  test::EngineModelFixture f(backend, {}, dir, 64, kBudget, kSeqs);
  KvBlockManager blocks({64, 16, true});
  Engine engine(*f.runner, blocks, nullptr, test::engine_test_options(f.config, kBudget, kSeqs));
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> token(3, static_cast<int32_t>(f.config.vocab_size) - 1);
  std::vector<int32_t> prompt(150);  // prefilled in chunks of at most 64 tokens
  for (int32_t& t : prompt) t = token(rng);
  const auto run = [&](int32_t k, std::vector<TokenLogprobs>* prompt_logprobs) {
    RequestSpec spec;
    spec.prompt = prompt;
    spec.stop.max_tokens = 5;
    spec.stop.ignore_eos = true;
    spec.prompt_logprobs = k;
    std::vector<int32_t> generated;
    int64_t deltas_with_prompt_logprobs = 0;
    spec.on_output = [&](const RequestOutput& o) {
      generated.insert(generated.end(), o.token_ids.begin(), o.token_ids.end());
      if (!o.prompt_logprobs.empty()) {
        ++deltas_with_prompt_logprobs;
        *prompt_logprobs = o.prompt_logprobs;
      }
    };
    // A neighbour that shares the prompt's first 32 tokens: its blocks enter the prefix cache.
    RequestSpec neighbour;
    neighbour.prompt.assign(prompt.begin(), prompt.begin() + 32);
    neighbour.stop.max_tokens = 3;
    engine.submit(neighbour);
    while (engine.step()) {
    }
    engine.submit(spec);
    while (engine.step()) {
    }
    EXPECT_LE(deltas_with_prompt_logprobs, 1);
    return generated;
  };
  std::vector<TokenLogprobs> got, none;
  const std::vector<int32_t> with = run(3, &got), without = run(-1, &none);
  EXPECT_EQ(with, without) << "prompt logprobs changed what the request generates";
  EXPECT_TRUE(none.empty());
  const std::vector<TokenLogprobs> want = reference(dir, backend, prompt, 3);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(std::memcmp(&got[i].logprob, &want[i].logprob, 4), 0) << "prompt token " << i + 1;
    EXPECT_EQ(got[i].rank, want[i].rank) << "prompt token " << i + 1;
    EXPECT_GE(got[i].rank, 1);
    ASSERT_EQ(got[i].top.size(), 3u) << "prompt token " << i + 1;
    for (size_t r = 0; r < 3; ++r) {
      EXPECT_EQ(got[i].top[r].first, want[i].top[r].first) << "prompt token " << i + 1 << " rank " << r;
      EXPECT_EQ(std::memcmp(&got[i].top[r].second, &want[i].top[r].second, 4), 0) << "prompt token " << i + 1;
    }
  }
}

}  // namespace
}  // namespace fg
