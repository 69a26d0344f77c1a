// tests/test_greedy_stop.cpp — greedy generation ends after a stop id (runner/greedy_generator.h),
// eagerly and through the full-graph runner alike: what `generate` relies on to end a text prompt
// at the model's EOS. On the built-in tiny model, with one of its own greedy tokens as the "EOS".
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "model/model_loader.h"
#include "runner/greedy_generator.h"

namespace fg {
namespace {

TEST(GreedyStop, EndsAfterTheFirstStopId) {
  CpuBackend backend(1);
  LoadedModel loaded = load_model("", LoadOptions{}, backend);
  const std::vector<int32_t> prompt = {1, 2, 3, 4};
  const int64_t max_tokens = 8;
  LlamaModel model(loaded.config, std::move(loaded.weights), backend, static_cast<int64_t>(prompt.size()), 1);
  KvCache kv = allocate_kv_cache(backend, loaded.config, 4, 16, DType::kF32);

  const std::vector<int32_t> all = generate_greedy(model, kv, prompt, max_tokens, false).generated;
  ASSERT_EQ(all.size(), static_cast<size_t>(max_tokens));
  const int32_t stop = all[2];
  const auto upto = std::find(all.begin(), all.end(), stop) + 1;  // the stop id is returned last
  const std::vector<int32_t> want(all.begin(), upto);

  EXPECT_EQ(generate_greedy(model, kv, prompt, max_tokens, false, {-1, stop}).generated, want);
  EXPECT_EQ(generate_greedy(model, kv, prompt, max_tokens, false, {}).generated, all);

  RunnerOptions ro;
  ro.max_num_tokens = static_cast<int64_t>(prompt.size());
  ro.max_num_seqs = 1;
  ModelRunner runner(model, kv, ro);
  runner.capture_graphs();
  std::vector<int32_t> seen;
  const auto on_token = [&seen](int32_t id) { seen.push_back(id); };
  EXPECT_EQ(generate_greedy_with_runner(runner, kv, prompt, max_tokens, ro.max_num_tokens, on_token, {stop}), want);
  EXPECT_EQ(seen, want);  // the stop id is seen too: the caller decides it is no text
  EXPECT_EQ(generate_greedy_with_runner(runner, kv, prompt, max_tokens, ro.max_num_tokens), all);
}

}  // namespace
}  // namespace fg
