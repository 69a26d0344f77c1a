// tests/test_request_json.cpp — engine/request_json.h, the fields `generate --prompts` and the
// server share: vLLM's defaults (temperature 1.0, not greedy), the model's generation_config.json
// defaults under the request's own values, and the new fields (logit_bias, prompt_logprobs,
// priority) with refusals that name them and quote at most an excerpt.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "engine/request_json.h"

namespace fg {
namespace {

using nlohmann::json;

RequestSpec read(const json& body, const SamplingDefaults& defaults = {}, int64_t vocab = 0) {
  RequestSpec spec;
  spec.stop.max_tokens = 16;
  read_request_fields(body, spec, defaults, vocab);
  return spec;
}

std::string refusal(const json& body, int64_t vocab = 0) {
  try {
    read(body, {}, vocab);
  } catch (const RequestFieldError& e) {
    return e.param();
  }
  return "(accepted)";
}

TEST(RequestJson, OmittedSamplingFieldsTakeVllmsDefaults) {
  const RequestSpec s = read(json::object());
  EXPECT_FLOAT_EQ(s.sampling.temperature, 1.0f);  // vLLM's default: sampling, not greedy
  EXPECT_FLOAT_EQ(s.sampling.top_p, 1.0f);
  EXPECT_EQ(s.sampling.top_k, 0);
  EXPECT_FLOAT_EQ(s.sampling.min_p, 0.0f);
  EXPECT_FLOAT_EQ(s.sampling.repetition_penalty, 1.0f);
  EXPECT_FALSE(s.has_seed);
  EXPECT_TRUE(s.logit_bias.empty());
  EXPECT_EQ(s.prompt_logprobs, -1);
  EXPECT_EQ(s.priority, 0);
  EXPECT_EQ(s.stop.max_tokens, 16);  // the caller's
  EXPECT_FLOAT_EQ(read({{"temperature", 0}}).sampling.temperature, 0.0f);
}

TEST(RequestJson, GenerationConfigDefaultsGiveWayToTheRequest) {
  SamplingDefaults d;
  d.temperature = 0.6f;
  d.top_p = 0.9f;
  d.top_k = 20;
  d.min_p = 0.1f;
  d.repetition_penalty = 1.2f;
  d.max_tokens = 100;  // the server's business (chat only), not this reader's
  const RequestSpec s = read(json::object(), d);
  EXPECT_FLOAT_EQ(s.sampling.temperature, 0.6f);
  EXPECT_FLOAT_EQ(s.sampling.top_p, 0.9f);
  EXPECT_EQ(s.sampling.top_k, 20);
  EXPECT_FLOAT_EQ(s.sampling.min_p, 0.1f);
  EXPECT_FLOAT_EQ(s.sampling.repetition_penalty, 1.2f);
  EXPECT_EQ(s.stop.max_tokens, 16);
  const RequestSpec r = read({{"temperature", 0}, {"top_k", -1}, {"top_p", 1}}, d);
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.0f);
  EXPECT_EQ(r.sampling.top_k, 0);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 1.0f);
  EXPECT_FLOAT_EQ(r.sampling.min_p, 0.1f);
}

TEST(RequestJson, LogitBias) {
  const RequestSpec s = read({{"logit_bias", {{"5", 1.5}, {"7", -100}, {"9", 100}}}}, {}, 10);
  ASSERT_EQ(s.logit_bias.size(), 3u);
  EXPECT_EQ(s.logit_bias[0], (std::pair<int32_t, float>{5, 1.5f}));
  EXPECT_EQ(s.logit_bias[1], (std::pair<int32_t, float>{7, -100.0f}));
  EXPECT_TRUE(read({{"logit_bias", json::object()}}).logit_bias.empty());
  for (const json& bias : {json{{"x", 1}}, json{{"-1", 1}}, json{{"1.5", 1}}, json{{"", 1}}, json{{"5", 100.5}},
                           json{{"5", "1"}}, json{{"5", 1}, {"05", 2}}, json{{"10", 1}}, json{{"99999999999", 1}},
                           json::array({1})}) {
    EXPECT_EQ(refusal({{"logit_bias", bias}}, 10), "logit_bias") << bias.dump();
  }
  json many = json::object();
  for (size_t i = 0; i <= kMaxLogitBiasEntries; ++i) many[std::to_string(i)] = 1;
  EXPECT_EQ(refusal({{"logit_bias", many}}, 100000), "logit_bias");
}

TEST(RequestJson, PromptLogprobsAndPriority) {
  EXPECT_EQ(read({{"prompt_logprobs", 0}}).prompt_logprobs, 0);
  EXPECT_EQ(read({{"prompt_logprobs", 5}}).prompt_logprobs, 5);
  EXPECT_EQ(refusal({{"prompt_logprobs", 21}}), "prompt_logprobs");
  EXPECT_EQ(refusal({{"prompt_logprobs", -1}}), "prompt_logprobs");
  EXPECT_EQ(refusal({{"prompt_logprobs", true}}), "prompt_logprobs");
  EXPECT_EQ(read({{"priority", -7}}).priority, -7);
  EXPECT_EQ(read({{"priority", INT64_MAX}}).priority, INT64_MAX);
  EXPECT_EQ(refusal({{"priority", 1.5}}), "priority");
  EXPECT_EQ(refusal({{"priority", uint64_t{1} << 63}}), "priority");
  EXPECT_EQ(refusal({{"seed", uint64_t{1} << 63}}), "seed");  // no longer clamped to INT64_MAX
}

TEST(RequestJson, MessagesQuoteAnExcerpt) {
  const std::string huge(4 << 20, 'x');
  for (const char* name : {"max_tokens", "top_k", "seed", "ignore_eos", "priority", "prompt_logprobs"}) {
    try {
      read({{name, huge}});
      ADD_FAILURE() << name;
    } catch (const RequestFieldError& e) {
      EXPECT_EQ(e.param(), name);
      EXPECT_LT(std::string(e.what()).size(), 300u) << name;
    }
  }
  try {
    read({{"logit_bias", {{huge, 1}}}});
    ADD_FAILURE();
  } catch (const RequestFieldError& e) {
    EXPECT_LT(std::string(e.what()).size(), 300u);
  }
}

TEST(RequestJson, TheFieldNamesListed) {
  const auto& names = request_field_names();
  for (const char* name : {"temperature", "logit_bias", "prompt_logprobs", "priority", "logprobs", "stop"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
}

}  // namespace
}  // namespace fg
