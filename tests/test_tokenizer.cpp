// tests/test_tokenizer.cpp — the tokenizer against Hugging Face goldens (Llama-2, Llama-3.1, Qwen3),
// the streaming detokenizer's guarantees, and the refusals of tokenizer.json files fullgraph does
// not support or that are malformed (each message must name the problem).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "test_support.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace fg {
namespace {

const std::vector<std::string>& tokenizer_names() {
  static const std::vector<std::string> names = {"llama2", "llama3_1", "qwen3"};
  return names;
}

using test::tokenizer_dir;
const Tokenizer& fixture(const std::string& name) { return test::tokenizer_fixture(name); }

// A small valid tokenizer.json to break in the refusal tests.
nlohmann::json tiny_tokenizer() {
  return nlohmann::json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 4, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false,
                      "normalized": false, "special": true}],
    "normalizer": {"type": "NFC"},
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
      "special_tokens": {"<s>": {"id": "<s>", "ids": [4], "tokens": ["<s>"]}}},
    "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
              "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
              "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3}, "merges": ["a b"]}
  })");
}

// A small SentencePiece-style one (byte fallback) for the byte-token refusals.
nlohmann::json tiny_sentencepiece() {
  nlohmann::json j = tiny_tokenizer();
  j["normalizer"] = nlohmann::json::parse(R"({"type": "Sequence", "normalizers": [
      {"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]})");
  j["pre_tokenizer"] = nullptr;
  j["decoder"] = nlohmann::json::parse(R"({"type": "Sequence", "decoders": [
      {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"},
      {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})");
  j["model"]["byte_fallback"] = true;
  j["model"]["vocab"] = {{"<0x41>", 0}, {"▁", 1}, {"b", 2}, {"▁b", 3}};
  j["model"]["merges"] = {"▁ b"};
  return j;
}

struct GoldenLine {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<int32_t> ids_with_special;
  std::string decoded;
};

std::vector<GoldenLine> golden(const std::string& name) {
  std::ifstream in(tokenizer_dir(name) + "/golden.jsonl");
  EXPECT_TRUE(in) << "missing golden.jsonl for " << name;
  std::vector<GoldenLine> out;
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    out.push_back({j["text"], j["ids"], j["ids_with_special"], j["decoded"]});
  }
  return out;
}

// Streams `ids` through the detokenizer; checks each delta is valid UTF-8 and returns the deltas joined.
std::string stream(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special) {
  IncrementalDetokenizer detok(tok, skip_special);
  std::string joined;
  for (const int32_t id : ids) {
    const std::string delta = detok.push(id);
    EXPECT_TRUE(utf8::is_valid(delta)) << "delta after id " << id << " is not valid UTF-8";
    joined += delta;
  }
  const std::string rest = detok.finish();
  EXPECT_TRUE(utf8::is_valid(rest));
  return joined + rest;
}

class TokenizerGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerGolden, EveryLineMatchesHuggingFace) {
  const Tokenizer& tok = fixture(GetParam());
  const auto lines = golden(GetParam());
  ASSERT_EQ(lines.size(), 50u);
  for (const GoldenLine& g : lines) {
    EXPECT_EQ(tok.encode(g.text, false), g.ids) << "text: " << g.text;
    EXPECT_EQ(tok.encode(g.text, true), g.ids_with_special) << "text: " << g.text;
    EXPECT_EQ(tok.decode(g.ids, false), g.decoded) << "text: " << g.text;
  }
}

TEST_P(TokenizerGolden, EncodingIsTheSameFromManyThreads) {
  const Tokenizer& tok = fixture(GetParam());
  const auto lines = golden(GetParam());
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round)
        for (const GoldenLine& g : lines) failures[t] += tok.encode(g.text, true) != g.ids_with_special;
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

std::string param_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(Fixtures, TokenizerGolden, ::testing::ValuesIn(tokenizer_names()), param_name);

class TokenizerIncremental : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerIncremental, DeltasAreValidAndJoinToTheFullDecodeOnEveryGoldenLine) {
  const Tokenizer& tok = fixture(GetParam());
  for (const GoldenLine& g : golden(GetParam()))
    for (const auto* ids : {&g.ids, &g.ids_with_special})
      for (const bool skip : {false, true})
        EXPECT_EQ(stream(tok, *ids, skip), tok.decode(*ids, skip)) << "text: " << g.text << " skip=" << skip;
}

// Arbitrary id sequences, as a model may produce them: stray byte tokens that never form a
// character, byte runs cut short, special tokens anywhere, ids past the vocabulary.
TEST_P(TokenizerIncremental, RandomIdSequencesJoinToTheFullDecode) {
  const Tokenizer& tok = fixture(GetParam());
  std::mt19937 rng(1234);
  const auto vocab = static_cast<int32_t>(tok.vocab_size());
  for (int round = 0; round < 3000; ++round) {
    std::vector<int32_t> ids(std::uniform_int_distribution<int>(0, 12)(rng));
    for (int32_t& id : ids) {
      const int kind = std::uniform_int_distribution<int>(0, 9)(rng);
      if (kind < 4) id = std::uniform_int_distribution<int32_t>(0, 300)(rng);        // bytes, short tokens
      else if (kind < 5) id = vocab - 1 - std::uniform_int_distribution<int32_t>(0, 30)(rng);  // specials
      else if (kind < 6) id = std::uniform_int_distribution<int32_t>(0, 2)(rng);     // <unk> <s> </s> / ! " #
      else if (kind < 7) id = vocab + std::uniform_int_distribution<int32_t>(0, 5)(rng);  // no token
      else id = std::uniform_int_distribution<int32_t>(0, vocab - 1)(rng);
    }
    for (const bool skip : {false, true}) EXPECT_EQ(stream(tok, ids, skip), tok.decode(ids, skip));
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TokenizerIncremental, ::testing::ValuesIn(tokenizer_names()), param_name);

// Hugging Face decodes a ByteFallback run as one U+FFFD per byte once any byte is invalid, so a
// finished "\n" (<0x0A>) changes when <0xF0> follows it. The stream must hold it until the run ends.
TEST(TokenizerIncrementalCase, ByteRunThatTurnsInvalidIsHeldBack) {
  const Tokenizer& tok = fixture("llama2");
  const int32_t newline = *tok.token_to_id("<0x0A>"), f0 = *tok.token_to_id("<0xF0>");
  EXPECT_EQ(tok.decode(std::vector<int32_t>{newline}, false), "\n");
  EXPECT_EQ(tok.decode(std::vector<int32_t>{newline, f0}, false), "\xEF\xBF\xBD\xEF\xBF\xBD");
  IncrementalDetokenizer detok(tok, false);
  EXPECT_EQ(detok.push(newline), "");
  EXPECT_EQ(detok.push(f0), "");
  EXPECT_EQ(detok.finish(), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(TokenizerIncrementalCase, EmojiSplitAcrossByteLevelTokensIsEmittedWhole) {
  const Tokenizer& tok = fixture("qwen3");
  const std::vector<int32_t> ids = tok.encode("a😀b", false);
  IncrementalDetokenizer detok(tok, false);
  std::vector<std::string> deltas;
  for (const int32_t id : ids) deltas.push_back(detok.push(id));
  deltas.push_back(detok.finish());
  std::string joined;
  for (const auto& d : deltas) {
    EXPECT_TRUE(d.empty() || utf8::is_valid(d));
    joined += d;
  }
  EXPECT_EQ(joined, "a😀b");
  EXPECT_NE(std::find(deltas.begin(), deltas.end(), "😀"), deltas.end());
}

// Random streams through the tiny SentencePiece-style tokenizer with decoders that stress the
// stream: Strip of two leading and one trailing space (acts on the edges of the whole text), and a
// Replace of a two-character pattern after Fuse (cannot be decoded by windows: decoded at finish).
TEST(TokenizerIncrementalCase, DecoderEdgesAndWholeTextDecoding) {
  const auto random_streams = [](const Tokenizer& tok) {
    std::mt19937 rng(99);
    for (int round = 0; round < 2000; ++round) {
      std::vector<int32_t> ids(std::uniform_int_distribution<int>(0, 10)(rng));
      for (int32_t& id : ids) id = std::uniform_int_distribution<int32_t>(0, 5)(rng);
      for (const bool skip : {false, true}) EXPECT_EQ(stream(tok, ids, skip), tok.decode(ids, skip));
    }
  };
  auto j = tiny_sentencepiece();
  j["decoder"]["decoders"][3] = {{"type", "Strip"}, {"content", " "}, {"start", 2}, {"stop", 1}};
  const Tokenizer edges = Tokenizer::from_json(j.dump(), "edges");
  EXPECT_TRUE(edges.stream_plan().by_window);
  EXPECT_EQ(edges.decode(std::vector<int32_t>{1, 1, 0, 1, 1, 0, 1, 1}, false), "A  A ");
  random_streams(edges);
  j["decoder"]["decoders"][3] = {{"type", "Replace"}, {"pattern", {{"String", " b"}}}, {"content", "_"}};
  const Tokenizer whole = Tokenizer::from_json(j.dump(), "whole");
  EXPECT_FALSE(whole.stream_plan().by_window);
  random_streams(whole);
  // Metaspace drops ▁ in the first decoded token only, which a window must not mistake itself for.
  j["decoder"] = nlohmann::json::parse(R"({"type": "Sequence", "decoders": [
      {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false},
      {"type": "ByteFallback"}, {"type": "Fuse"}]})");
  const Tokenizer metaspace = Tokenizer::from_json(j.dump(), "metaspace");
  EXPECT_TRUE(metaspace.stream_plan().by_window);
  EXPECT_EQ(metaspace.decode(std::vector<int32_t>{1, 3, 1, 0}, false), " b A");  // only the first token loses its ▁
  random_streams(metaspace);
}

TEST(TokenizerApi, VocabularyQueries) {
  const Tokenizer& l3 = fixture("llama3_1");
  EXPECT_EQ(l3.vocab_size(), 128256);
  EXPECT_EQ(l3.token_to_id("<|begin_of_text|>"), 128000);
  EXPECT_EQ(l3.id_to_token(128000), "<|begin_of_text|>");
  EXPECT_TRUE(l3.is_special(128009));
  EXPECT_FALSE(l3.is_special(9906));
  EXPECT_EQ(l3.token_to_id("no such token"), std::nullopt);
  EXPECT_EQ(l3.id_to_token(128256), std::nullopt);
  const Tokenizer& q3 = fixture("qwen3");
  EXPECT_EQ(q3.vocab_size(), 151669);
  EXPECT_FALSE(q3.is_special(*q3.token_to_id("<think>")));  // an added token that is not special
  EXPECT_EQ(fixture("llama2").vocab_size(), 32000);
}

TEST(TokenizerApi, DecodeSkipsIdsWithoutATokenLikeHuggingFace) {
  const Tokenizer& l3 = fixture("llama3_1");
  const std::vector<int32_t> ids = {9906, 999999, -5, 1917};
  EXPECT_EQ(l3.decode(ids, false), "Hello world");
}

TEST(TokenizerApi, EncodeRefusesInvalidUtf8) {
  try {
    fixture("qwen3").encode("ok\xC3(", false);
    FAIL() << "expected fg::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not valid UTF-8"), std::string::npos) << e.what();
  }
}

TEST(TokenizerApi, LongInputsOfOneClass) {
  // Long runs exercise the regex engine's backtracking limits and the merge loop on long words.
  for (const std::string& name : tokenizer_names()) {
    const Tokenizer& tok = fixture(name);
    for (const std::string unit : {" ", "a", "7", "\n", "é", "😀", "<s>"}) {
      std::string text;
      for (int i = 0; i < 100000; ++i) text += unit;
      EXPECT_EQ(tok.decode(tok.encode(text, false), false), text) << name << " " << unit;
    }
  }
}

std::string load_error(const std::string& text) {
  try {
    Tokenizer::from_json(text, "test.json");
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "the tokenizer loaded, but it should have been refused";
  return {};
}

std::string load_error(const nlohmann::json& j) { return load_error(j.dump()); }

void expect_mentions(const std::string& message, std::initializer_list<std::string> parts) {
  for (const std::string& part : parts)
    EXPECT_NE(message.find(part), std::string::npos) << "message \"" << message << "\" does not mention " << part;
}

TEST(TokenizerLoad, TheTinyTokenizersWork) {
  const Tokenizer bpe = Tokenizer::from_json(tiny_tokenizer().dump(), "tiny");
  EXPECT_EQ(bpe.encode("ab ab<s>", true), (std::vector<int32_t>{4, 2, 3, 2, 4}));
  EXPECT_EQ(bpe.decode(std::vector<int32_t>{4, 2, 3, 2}, true), "ab ab");
  const Tokenizer sp = Tokenizer::from_json(tiny_sentencepiece().dump(), "tiny-sp");
  EXPECT_EQ(sp.encode("b A", false), (std::vector<int32_t>{3, 1, 0}));
  EXPECT_EQ(sp.decode(std::vector<int32_t>{3, 1, 0}, false), "b A");
}

TEST(TokenizerRefusal, UnsupportedModelType) {
  auto j = tiny_tokenizer();
  j["model"]["type"] = "WordPiece";
  expect_mentions(load_error(j), {"test.json", "model.type", "WordPiece", "not supported"});
}

TEST(TokenizerRefusal, UnsupportedNormalizer) {
  auto j = tiny_tokenizer();
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "Lowercase"}}}}};
  expect_mentions(load_error(j), {"normalizer.normalizers[1].type", "Lowercase", "not supported"});
  j["normalizer"] = {{"type", "NFKC"}};
  expect_mentions(load_error(j), {"normalizer.type", "NFKC", "not supported"});
}

TEST(TokenizerRefusal, UnsupportedPreTokenizerDecoderPostProcessorAndOptions) {
  auto j = tiny_tokenizer();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_mentions(load_error(j), {"pre_tokenizer.type", "Whitespace"});
  j = tiny_tokenizer();
  j["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}};
  expect_mentions(load_error(j), {"decoder.type", "WordPiece"});
  j = tiny_tokenizer();
  j["post_processor"] = {{"type", "RobertaProcessing"}};
  expect_mentions(load_error(j), {"post_processor.type", "RobertaProcessing"});
  j = tiny_tokenizer();
  j["model"]["dropout"] = 0.1;
  expect_mentions(load_error(j), {"model.dropout", "dropout"});
  j = tiny_tokenizer();
  j["pre_tokenizer"]["add_prefix_space"] = true;
  expect_mentions(load_error(j), {"pre_tokenizer.add_prefix_space"});
  j = tiny_tokenizer();
  j["model"]["something_new"] = 1;
  expect_mentions(load_error(j), {"model.something_new", "not supported"});
  j = tiny_tokenizer();
  j["truncation"] = {{"max_length", 8}};
  expect_mentions(load_error(j), {"truncation"});
}

TEST(TokenizerRefusal, RegexConstructsWhoseMeaningDiffers) {
  auto j = tiny_tokenizer();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\\d+"}}}, {"behavior", "Isolated"},
                        {"invert", false}};
  expect_mentions(load_error(j), {"pre_tokenizer.pattern.Regex", "\\d"});
  j["pre_tokenizer"]["pattern"]["Regex"] = "\\p{Han}+";
  expect_mentions(load_error(j), {"\\p{Han}"});
  j["pre_tokenizer"]["pattern"]["Regex"] = "a*";
  expect_mentions(load_error(j), {"empty string"});
  j["pre_tokenizer"]["pattern"]["Regex"] = "(a";
  expect_mentions(load_error(j), {"does not compile"});
}

TEST(TokenizerRefusal, BadByteFallbackToken) {
  auto j = tiny_sentencepiece();
  j["model"]["vocab"]["<0xZZ>"] = 4;
  expect_mentions(load_error(j), {"model.vocab", "<0xZZ>", "byte-fallback"});
  j = tiny_sentencepiece();
  j["model"]["vocab"]["<0x4>"] = 4;
  expect_mentions(load_error(j), {"<0x4>", "byte-fallback"});
}

TEST(TokenizerRefusal, IdOutOfRange) {
  auto j = tiny_tokenizer();
  j["model"]["vocab"]["b"] = 7;
  expect_mentions(load_error(j), {"model.vocab", "\"b\"", "id 7", "out of range"});
  j = tiny_tokenizer();
  j["added_tokens"][0]["id"] = 9;
  expect_mentions(load_error(j), {"added_tokens[0].id", "out of range"});
  j = tiny_tokenizer();
  j["post_processor"]["special_tokens"]["<s>"]["ids"] = {40};
  expect_mentions(load_error(j), {"special_tokens.<s>.ids[0]", "out of range"});
}

TEST(TokenizerRefusal, DuplicateId) {
  auto j = tiny_tokenizer();
  j["model"]["vocab"]["b"] = 0;
  j["model"]["vocab"]["extra"] = 1;
  expect_mentions(load_error(j), {"model.vocab", "both have id 0", "duplicate id"});
  j = tiny_tokenizer();
  j["added_tokens"][0]["id"] = 2;
  expect_mentions(load_error(j), {"added_tokens[0].id", "duplicate id"});
}

TEST(TokenizerRefusal, MergeWithUnknownToken) {
  auto j = tiny_tokenizer();
  j["model"]["merges"] = {"a b", "a c"};
  expect_mentions(load_error(j), {"model.merges[1]", "unknown token \"c\""});
  j["model"]["merges"] = nlohmann::json::array({nlohmann::json::array({"b", "a"})});
  expect_mentions(load_error(j), {"model.merges[0]", "merged token \"ba\""});
  j["model"]["merges"] = {"a b", "a b"};
  expect_mentions(load_error(j), {"model.merges[1]", "repeats merge #0"});
}

TEST(TokenizerRefusal, MalformedJson) {
  expect_mentions(load_error(std::string("{\"version\": \"1.0\", ")), {"test.json", "not valid JSON"});
  expect_mentions(load_error(std::string("\xFF\xFE")), {"test.json", "not valid JSON"});
  expect_mentions(load_error(std::string(100000, '[') + std::string(100000, ']')), {"test.json", "deeper than"});
  expect_mentions(load_error(std::string(R"({"model": 1, "model": 2})")), {"test.json", "\"model\" twice"});
  expect_mentions(load_error(std::string("[]")), {"test.json", "expected an object"});
  auto j = tiny_tokenizer();
  j.erase("model");
  expect_mentions(load_error(j), {"\"model\" is missing"});
}

TEST(TokenizerRefusal, MissingFile) {
  try {
    Tokenizer::from_file("/nonexistent/tokenizer.json");
    FAIL() << "expected fg::Error";
  } catch (const Error& e) {
    expect_mentions(e.what(), {"/nonexistent/tokenizer.json"});
  }
}

}  // namespace
}  // namespace fg
