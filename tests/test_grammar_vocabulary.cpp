// tests/test_grammar_vocabulary.cpp — the grammar engine's view of a vocabulary
// (grammar/grammar_vocabulary.h), on the real fixture tokenizers: each id's bytes, joined over an
// encoding, are the text (byte-level BPE, and SentencePiece with byte fallback, whose normalizer
// prepends the ▁ that starts the text); special tokens have none; the EOS ids are the stop ids;
// the model's logits width decides the size.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar_test_support.h"

namespace fg {
namespace {

const std::vector<std::string> kTexts = {
    "Hello, world!",
    R"({"name": "Zoë", "age": 42, "tags": ["a", "b"]})",
    "emoji 🎉 and 中文 and ǅ",
    "  two spaces\nnew line\ttab  ",
};

TEST(GrammarVocabulary, TokenBytesJoinToTheEncodedText) {
  for (const std::string name : {"llama2", "llama3_1", "qwen3"}) {
    const Tokenizer& tok = test::tokenizer_fixture(name);
    const GrammarVocabulary& vocab = test::vocabulary_fixture(name);
    for (const std::string& text : kTexts) {
      std::string joined;
      for (int32_t id : tok.encode(text, /*add_special_tokens=*/false))
        joined += vocab.token_bytes[static_cast<size_t>(id)];
      // Llama-2's normalizer prepends ▁ to the text; its decoder strips it from the text's start,
      // a first-token rule the grammar's vocabulary leaves out (grammar_vocabulary.h).
      const std::string expected = name == "llama2" ? " " + text : text;
      EXPECT_EQ(joined, expected) << name << ": " << text;
    }
  }
}

TEST(GrammarVocabulary, ByteTokensKeepTheirRawBytes) {
  const GrammarVocabulary& llama2 = test::vocabulary_fixture("llama2");
  const int32_t byte_f0 = *test::tokenizer_fixture("llama2").token_to_id("<0xF0>");
  EXPECT_EQ(llama2.token_bytes[static_cast<size_t>(byte_f0)], "\xF0");
  // Byte-level: the GPT-2 byte for 0xF0 is "ð".
  const GrammarVocabulary& llama3 = test::vocabulary_fixture("llama3_1");
  const int32_t byte_level_f0 = *test::tokenizer_fixture("llama3_1").token_to_id("ð");
  EXPECT_EQ(llama3.token_bytes[static_cast<size_t>(byte_level_f0)], "\xF0");
}

TEST(GrammarVocabulary, SpecialTokensHaveNoBytesAndEosIdsStop) {
  for (const std::string name : {"llama2", "llama3_1", "qwen3"}) {
    const Tokenizer& tok = test::tokenizer_fixture(name);
    const GrammarVocabulary& vocab = test::vocabulary_fixture(name);
    int special = 0;
    for (int32_t id = 0; id < tok.vocab_size(); ++id) {
      if (!tok.is_special(id)) continue;
      ++special;
      EXPECT_EQ(vocab.token_bytes[static_cast<size_t>(id)], "") << name << " id " << id;
    }
    EXPECT_GT(special, 0) << name;
    std::vector<int32_t> eos = test::fixture_eos_ids(name);
    std::sort(eos.begin(), eos.end());
    EXPECT_EQ(vocab.stop_token_ids, eos) << name;
  }
  // Qwen3's <think> is an added token that is not special: it is text, and keeps its bytes.
  const int32_t think = *test::tokenizer_fixture("qwen3").token_to_id("<think>");
  EXPECT_EQ(test::vocabulary_fixture("qwen3").token_bytes[static_cast<size_t>(think)], "<think>");
}

TEST(GrammarVocabulary, SizedByTheModelsLogits) {
  const Tokenizer& tok = test::tokenizer_fixture("qwen3");
  const GrammarVocabulary& wide = test::vocabulary_fixture("qwen3");
  ASSERT_EQ(wide.vocab_size(), 151936);
  for (int64_t id = tok.vocab_size(); id < wide.vocab_size(); ++id)
    EXPECT_EQ(wide.token_bytes[static_cast<size_t>(id)], "") << id;

  const std::vector<int32_t> eos = {2};
  const GrammarVocabulary narrow = grammar_vocabulary(test::tokenizer_fixture("llama2"), 1000, eos);
  EXPECT_EQ(narrow.vocab_size(), 1000);
  EXPECT_EQ(narrow.token_bytes[999], test::vocabulary_fixture("llama2").token_bytes[999]);
}

TEST(GrammarVocabulary, RefusesMissingOrOutOfRangeEosIds) {
  const Tokenizer& tok = test::tokenizer_fixture("llama2");
  EXPECT_THROW(grammar_vocabulary(tok, 32000, {}), Error);
  const std::vector<int32_t> outside = {32000};
  try {
    grammar_vocabulary(tok, 32000, outside);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("EOS token id 32000"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fg
