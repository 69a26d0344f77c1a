// tests/test_gguf_tokenizer.cpp — the tokenizer of SmolLM2-135M-Instruct.Q4_1.gguf against Hugging
// Face's GGUF tokenizer converter: ids with and without special tokens, decodes and chat renders
// recorded by scripts/gguf/make_tokenizer_reference.py in tests/fixtures/gguf/smollm2_tokenizer.json.
// Skips when the model is not there (scripts/setup.sh fetches it).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "gguf_test_support.h"
#include "model/gguf_tokenizer_metadata.h"

namespace fg {
namespace {

using json = nlohmann::ordered_json;

std::filesystem::path smollm2_path() {
  if (const char* env = std::getenv("FULLGRAPH_GGUF_MODEL")) return env;
  return test::source_dir() / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf";
}

std::string show(const std::vector<int32_t>& ids) {
  std::string out;
  for (const int32_t id : ids) {
    if (!out.empty()) out.push_back(' ');
    out.append(std::to_string(id));
  }
  return out;
}

class SmolLM2Tokenizer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(smollm2_path())) return;
    tokenizer_ = new GgufTokenizer(load_gguf_tokenizer(smollm2_path().string()));
    reference_ = new json(json::parse(test::read_file_bytes(test::gguf_fixtures() / "smollm2_tokenizer.json")));
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete reference_;
    tokenizer_ = nullptr;
    reference_ = nullptr;
  }
  void SetUp() override {
    if (!tokenizer_) GTEST_SKIP() << smollm2_path() << " is not there; scripts/setup.sh fetches it";
  }
  static GgufTokenizer* tokenizer_;
  static json* reference_;
};
GgufTokenizer* SmolLM2Tokenizer::tokenizer_ = nullptr;
json* SmolLM2Tokenizer::reference_ = nullptr;

TEST_F(SmolLM2Tokenizer, SpecialIdsAndTemplate) {
  const GgufTokenizer& t = *tokenizer_;
  EXPECT_EQ(t.tokenizer.vocab_size(), 49152);
  EXPECT_EQ(t.bos_id, 1);
  EXPECT_EQ(t.eos_id, 2);
  EXPECT_EQ(t.unk_id, 0);
  EXPECT_EQ(t.pad_id, 2);
  EXPECT_FALSE(t.add_bos);
  EXPECT_EQ(t.stop_ids, std::vector<int32_t>{2});
  EXPECT_EQ(t.chat.bos_token, (*reference_)["bos_token"].get<std::string>());
  EXPECT_EQ(t.chat.eos_token, (*reference_)["eos_token"].get<std::string>());
  EXPECT_FALSE(t.chat.chat_template.empty());
  for (int32_t id = 0; id <= 16; ++id) EXPECT_TRUE(t.tokenizer.is_special(id)) << id;
  EXPECT_FALSE(t.tokenizer.is_special(17));
}

TEST_F(SmolLM2Tokenizer, IdsAndDecodesMatchTransformers) {
  const Tokenizer& tok = tokenizer_->tokenizer;
  const json& texts = (*reference_)["texts"];
  ASSERT_GE(texts.size(), 2000u);
  size_t id_mismatches = 0, decode_mismatches = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string text = texts[i].get<std::string>();
    const json& ids = (*reference_)["ids"][i];
    const auto plain = ids[0].get<std::vector<int32_t>>();
    const auto added = ids.back().get<std::vector<int32_t>>();
    const std::vector<int32_t> ours_plain = tok.encode(text, false), ours_added = tok.encode(text, true);
    if (ours_plain != plain || ours_added != added) {
      if (++id_mismatches <= 5)
        ADD_FAILURE() << "text #" << i << " " << json(text).dump() << "\n  ours:   " << show(ours_plain)
                      << "\n  theirs: " << show(plain);
      continue;
    }
    const json& decodes = (*reference_)["decodes"][i];
    for (const bool skip : {false, true}) {
      const json& want = decodes[skip ? 1 : 0];
      const std::string expected = want.is_null() ? text : want.get<std::string>();
      const std::string ours = tok.decode(added, skip);
      if (ours != expected && ++decode_mismatches <= 5)
        ADD_FAILURE() << "decode of text #" << i << " (skip_special_tokens=" << skip << "): " << json(ours).dump()
                      << " != " << json(expected).dump();
    }
  }
  EXPECT_EQ(id_mismatches, 0u) << "of " << texts.size() << " strings";
  EXPECT_EQ(decode_mismatches, 0u);
}

TEST_F(SmolLM2Tokenizer, ChatRendersMatchJinja2) {
  const ChatTemplate chat(tokenizer_->chat);
  const json& chats = (*reference_)["chats"];
  ASSERT_GE(chats.size(), 20u);
  for (size_t i = 0; i < chats.size(); ++i)
    for (const bool generation : {false, true}) {
      ChatRenderOptions options;
      options.add_generation_prompt = generation;
      EXPECT_EQ(chat.render(chats[i]["messages"], options), chats[i]["renders"][generation ? 1 : 0].get<std::string>())
          << "conversation #" << i << ", add_generation_prompt=" << generation;
    }
}

}  // namespace
}  // namespace fg
