// tests/test_server_sampling_defaults.cpp — the sampling a request gets when it says nothing, as
// vLLM gives it: temperature 1.0 on both endpoints (not greedy), the model's generation_config.json
// defaults under the request's own values, max_new_tokens as chat's default max_tokens, and n
// unseeded choices that each draw their own seed, so that they differ.
#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "server/engine_service.h"
#include "server/generation_job.h"
#include "server_test_support.h"

namespace fg::server {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::ModelFixture;

class SamplingDefaultsTest : public ModelFixture {};

TEST_F(SamplingDefaultsTest, OmittedTemperatureIsOneOnBothEndpoints) {
  EXPECT_FLOAT_EQ(completion({{"prompt", "hi"}}).spec.sampling.temperature, 1.0f);
  EXPECT_FLOAT_EQ(chat({{"messages", user("hi")}}).spec.sampling.temperature, 1.0f);
  EXPECT_FLOAT_EQ(completion({{"prompt", "hi"}, {"temperature", 0}}).spec.sampling.temperature, 0.0f);
  EXPECT_FLOAT_EQ(completion({{"prompt", "hi"}, {"temperature", nullptr}}).spec.sampling.temperature, 1.0f);
}

TEST_F(SamplingDefaultsTest, GenerationConfigDefaultsApplyToOmittedFields) {
  model_.sampling_defaults.temperature = 0.6f;
  model_.sampling_defaults.top_p = 0.9f;
  model_.sampling_defaults.top_k = 20;
  model_.sampling_defaults.repetition_penalty = 1.05f;
  model_.sampling_defaults.max_tokens = 40;
  for (const ParsedRequest& r : {completion({{"prompt", "hi"}}), chat({{"messages", user("hi")}})}) {
    EXPECT_FLOAT_EQ(r.spec.sampling.temperature, 0.6f);
    EXPECT_FLOAT_EQ(r.spec.sampling.top_p, 0.9f);
    EXPECT_EQ(r.spec.sampling.top_k, 20);
    EXPECT_FLOAT_EQ(r.spec.sampling.repetition_penalty, 1.05f);
  }
  const ParsedRequest mine = completion({{"prompt", "hi"}, {"temperature", 0.2}, {"top_k", 3}});
  EXPECT_FLOAT_EQ(mine.spec.sampling.temperature, 0.2f);
  EXPECT_EQ(mine.spec.sampling.top_k, 3);
  EXPECT_FLOAT_EQ(mine.spec.sampling.top_p, 0.9f);
  // max_new_tokens: chat's default (capped by the room left); completions keep OpenAI's 16.
  EXPECT_EQ(chat({{"messages", user("hi")}}).spec.stop.max_tokens, 40);
  EXPECT_EQ(completion({{"prompt", "hi"}}).spec.stop.max_tokens, 16);
  EXPECT_EQ(chat({{"messages", user("hi")}, {"max_tokens", 50}}).spec.stop.max_tokens, 50);
  model_.sampling_defaults.max_tokens = 100000;
  const ParsedRequest capped = chat({{"messages", user("hi")}});
  EXPECT_EQ(capped.spec.stop.max_tokens, model_.max_model_len - static_cast<int64_t>(capped.prompt.size()));
}

// Samples from the seed and step alone when temperature > 0; greedy (last + 1) otherwise.
class SeedSensitiveExecutor final : public StepExecutor {
 public:
  StepResult execute(const std::vector<ScheduledRequest>& requests) override {
    StepResult r;
    for (const ScheduledRequest& q : requests) {
      if (q.sampling.temperature > 0.0f) {
        const uint64_t h = static_cast<uint64_t>(q.sampling.seed) * 0x9E3779B97F4A7C15ull ^
                           static_cast<uint64_t>(q.sampling.step) * 0xC2B2AE3D27D4EB4Full;
        r.sampled.push_back(static_cast<int32_t>((h >> 33) % 100));
      } else {
        const int32_t last = q.output_ids.empty() ? q.prompt_ids.back() : q.output_ids.back();
        r.sampled.push_back((last + 1) % 100);
      }
    }
    return r;
  }
};

std::vector<std::vector<int32_t>> run_choices(const ParsedRequest& parsed) {
  SeedSensitiveExecutor executor;
  KvBlockManager kv({65, 4, true});
  EngineOptions o;
  o.max_model_len = 128;
  o.vocab_size = 100;
  o.scheduler.max_num_seqs = 8;
  o.seed = 1;
  Engine engine(executor, kv, nullptr, o);
  EngineService service(engine);
  ServerMetrics metrics;
  EXPECT_TRUE(service.try_admit(parsed.n, 10));
  auto job = std::make_shared<GenerationJob>(service, metrics, parsed.n, false);
  job->submit(parsed);
  EXPECT_TRUE(job->wait_finished(10s));
  std::vector<std::vector<int32_t>> out;
  for (const ChoiceOutput& c : job->outputs()) out.push_back(c.token_ids);
  service.stop();
  return out;
}

TEST_F(SamplingDefaultsTest, UnseededChoicesDrawTheirOwnSeeds) {
  model_.vocab_size = 100;
  const json body = {{"prompt", {1, 2, 3}}, {"n", 2}, {"max_tokens", 8}, {"ignore_eos", true}};
  const std::vector<std::vector<int32_t>> unseeded = run_choices(completion(body));
  ASSERT_EQ(unseeded.size(), 2u);
  EXPECT_NE(unseeded[0], unseeded[1]) << "two unseeded choices sampled the same tokens";
  // Seeded: choice i uses seed + i, so the choices still differ, and repeat across runs.
  json seeded = body;
  seeded["seed"] = 7;
  const auto a = run_choices(completion(seeded)), b = run_choices(completion(seeded));
  EXPECT_NE(a[0], a[1]);
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace fg::server
