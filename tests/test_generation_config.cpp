// tests/test_generation_config.cpp — model/generation_config.h: vLLM's set of sampling defaults
// read from generation_config.json (and nothing else), both modes of --generation-config, the eos
// ids, and refusals that name the file and the key.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "model/generation_config.h"

namespace fg {
namespace {

TEST(GenerationConfig, ReadsVllmsSamplingSetAndTheEosIds) {
  const GenerationDefaults d = parse_generation_defaults(
      R"({"temperature": 0.6, "top_p": 0.9, "top_k": 20, "min_p": 0.05, "repetition_penalty": 1.1,
          "max_new_tokens": 512, "do_sample": true, "num_beams": 1, "eos_token_id": [128001, 128009]})",
      "generation_config.json");
  EXPECT_FLOAT_EQ(*d.sampling.temperature, 0.6f);
  EXPECT_FLOAT_EQ(*d.sampling.top_p, 0.9f);
  EXPECT_EQ(*d.sampling.top_k, 20);
  EXPECT_FLOAT_EQ(*d.sampling.min_p, 0.05f);
  EXPECT_FLOAT_EQ(*d.sampling.repetition_penalty, 1.1f);
  EXPECT_EQ(*d.sampling.max_tokens, 512);
  EXPECT_EQ(d.eos_token_ids, (std::vector<int32_t>{128001, 128009}));
  EXPECT_EQ(d.sampling.describe(),
            "temperature=0.6, top_p=0.9, top_k=20, min_p=0.05, repetition_penalty=1.1, max_tokens=512");
}

TEST(GenerationConfig, VllmModeKeepsTheEosIdsOnly) {
  const char* text = R"({"temperature": 0.6, "eos_token_id": 2})";
  const GenerationDefaults d = parse_generation_defaults(text, "g.json", GenerationConfigMode::kVllm);
  EXPECT_TRUE(d.sampling.empty());
  EXPECT_EQ(d.eos_token_ids, (std::vector<int32_t>{2}));
  EXPECT_EQ(parse_generation_config_mode("auto"), GenerationConfigMode::kAuto);
  EXPECT_EQ(parse_generation_config_mode("vllm"), GenerationConfigMode::kVllm);
  EXPECT_THROW(parse_generation_config_mode("hf"), Error);
}

TEST(GenerationConfig, NullAbsentAndOffValues) {
  const GenerationDefaults d =
      parse_generation_defaults(R"({"temperature": null, "top_k": -1, "bos_token_id": 1})", "g.json");
  EXPECT_FALSE(d.sampling.temperature);
  EXPECT_EQ(*d.sampling.top_k, 0);  // -1 and 0 both mean off
  EXPECT_TRUE(d.eos_token_ids.empty());
  EXPECT_TRUE(parse_generation_defaults("[]", "g.json").sampling.empty());
  EXPECT_TRUE(parse_generation_defaults("{}", "g.json").sampling.describe().empty());
}

TEST(GenerationConfig, RefusesValuesNoRequestCouldSend) {
  for (const char* text : {R"({"temperature": -1})", R"({"temperature": 1e-9})", R"({"top_p": 0})",
                           R"({"top_p": 1.5})", R"({"top_k": -2})", R"({"min_p": 2})", R"({"repetition_penalty": 0})",
                           R"({"max_new_tokens": 0})", R"({"temperature": "hot"})", R"({"eos_token_id": -1})"}) {
    try {
      parse_generation_defaults(text, "my/generation_config.json");
      ADD_FAILURE() << "accepted " << text;
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("my/generation_config.json"), std::string::npos) << m;
      const std::string key = std::string(text).substr(3, std::string(text).find('"', 3) - 3);
      EXPECT_NE(m.find(key), std::string::npos) << m;
    }
  }
}

TEST(GenerationConfig, ReadsAModelFolder) {
  EXPECT_TRUE(read_generation_defaults("").eos_token_ids.empty());
  EXPECT_TRUE(read_generation_defaults("/nonexistent-folder").sampling.empty());
  const GenerationDefaults d = read_generation_defaults(std::string(FULLGRAPH_TESTDATA) + "/e2e/tiny-llama2tok");
  EXPECT_EQ(d.eos_token_ids, (std::vector<int32_t>{2}));
  EXPECT_TRUE(d.sampling.empty());  // the fixture sets no sampling field
}

}  // namespace
}  // namespace fg
