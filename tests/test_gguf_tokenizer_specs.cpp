// tests/test_gguf_tokenizer_specs.cpp — GGUF tokenizer metadata written from the Llama-2, Llama-3.1
// and Qwen3 tokenizer.json fixtures the way llama.cpp's converter writes them (tokens by id, token
// types, scores, merges, pre type), built by tokenizer_from_gguf and compared with the same
// tokenizer.json loaded directly, on the golden texts and the SmolLM2 reference's corpus strings;
// and the refusals of metadata fullgraph does not support.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.h"
#include "gguf_test_support.h"
#include "tokenizer/gguf_spm_merges.h"
#include "tokenizer/gguf_tokenizer.h"

namespace fg {
namespace {

using json = nlohmann::json;

std::filesystem::path tokenizer_dir(const std::string& name) {
  const char* env = std::getenv("FULLGRAPH_TESTDATA");
  return std::filesystem::path(env ? env : FULLGRAPH_TESTDATA) / "tokenizers" / name;
}

// What llama.cpp's converter writes for a tokenizer.json: every id's token (gaps as [PADn],
// unused), added special tokens as control, other added tokens as user-defined.
GgufTokenizerSpec spec_from_tokenizer_json(const json& doc, const std::string& model, const std::string& pre) {
  GgufTokenizerSpec s;
  s.model = model;
  s.pre = pre;
  std::map<int64_t, std::pair<std::string, GgufTokenType>> by_id;
  for (const auto& [token, id] : doc["model"]["vocab"].items()) by_id[id.get<int64_t>()] = {token, GgufTokenType::kNormal};
  for (const json& added : doc["added_tokens"])
    by_id[added["id"].get<int64_t>()] = {added["content"].get<std::string>(),
                                         added["special"].get<bool>() ? GgufTokenType::kControl
                                                                      : GgufTokenType::kUserDefined};
  const int64_t n = by_id.rbegin()->first + 1;
  for (int64_t id = 0; id < n; ++id) {
    auto it = by_id.find(id);
    std::string token = it != by_id.end() ? it->second.first : "[PAD" + std::to_string(id) + "]";
    GgufTokenType type = it != by_id.end() ? it->second.second : GgufTokenType::kUnused;
    if (model == "llama") {
      if (token == "<unk>") type = GgufTokenType::kUnknown;
      else if (token.size() == 6 && token.starts_with("<0x") && token.ends_with(">")) type = GgufTokenType::kByte;
      // SentencePiece's BPE scores fall with the id; bytes and controls score 0, and the pieces of
      // two or more spaces, added to the model by hand, score -1e9 (as in Llama-2's tokenizer.model).
      const bool spaces = token.size() > 3 && token.find_first_not_of("\xE2\x96\x81") == std::string::npos;
      s.scores.push_back(type != GgufTokenType::kNormal ? 0.0f : spaces ? -1e9f : -static_cast<float>(id));
    }
    s.tokens.push_back(std::move(token));
    s.token_types.push_back(static_cast<int32_t>(type));
  }
  return s;
}

std::vector<std::string> merges_of(const json& doc) {
  std::vector<std::string> out;
  for (const json& m : doc["model"]["merges"])
    out.push_back(m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>());
  return out;
}

std::vector<std::string> texts_for(const std::string& name) {
  std::vector<std::string> texts;
  std::ifstream golden(tokenizer_dir(name) / "golden.jsonl");
  for (std::string line; std::getline(golden, line);) texts.push_back(json::parse(line)["text"].get<std::string>());
  const json reference = json::parse(test::read_file_bytes(test::gguf_fixtures() / "smollm2_tokenizer.json"));
  for (const json& text : reference["texts"]) texts.push_back(text.get<std::string>());
  return texts;
}

// Encodes and decodes every text with both tokenizers; returns the number that differ.
size_t compare(const Tokenizer& ours, const Tokenizer& theirs, const std::vector<std::string>& texts) {
  size_t mismatches = 0;
  for (const std::string& text : texts) {
    for (const bool special : {false, true}) {
      const std::vector<int32_t> a = ours.encode(text, special), b = theirs.encode(text, special);
      const bool same = a == b && ours.decode(a, false) == theirs.decode(b, false) &&
                        ours.decode(a, true) == theirs.decode(b, true);
      if (!same && ++mismatches <= 5) ADD_FAILURE() << "differs on " << json(text).dump() << " (specials " << special << ")";
    }
  }
  return mismatches;
}

struct Fixture {
  json doc;
  Tokenizer direct;
};

// GGUF has no key for a normalizer, and neither llama.cpp nor transformers' GGUF converter applies
// one to byte-level vocabularies: the GGUF tokenizer is compared with the file's own without it.
std::optional<Fixture> load(const std::string& name, bool without_normalizer = false) {
  const auto path = tokenizer_dir(name) / "tokenizer.json";
  if (!std::filesystem::exists(path)) return std::nullopt;
  json doc = json::parse(test::read_file_bytes(path));
  json direct = doc;
  if (without_normalizer) direct["normalizer"] = nullptr;
  return Fixture{std::move(doc), Tokenizer::from_json(direct.dump(), path.string())};
}

TEST(GgufTokenizerSpecs, Llama3ByteLevelMatchesTokenizerJson) {
  auto f = load("llama3_1");
  if (!f) GTEST_SKIP() << "no llama3_1 fixture";
  GgufTokenizerSpec s = spec_from_tokenizer_json(f->doc, "gpt2", "llama-bpe");
  s.merges = merges_of(f->doc);
  s.bos_id = 128000;
  s.eos_id = 128009;
  s.add_bos = true;
  const GgufTokenizer t = tokenizer_from_gguf(s, "llama3_1 as GGUF");
  EXPECT_EQ(t.tokenizer.vocab_size(), f->direct.vocab_size());
  EXPECT_EQ(compare(t.tokenizer, f->direct, texts_for("llama3_1")), 0u);
}

TEST(GgufTokenizerSpecs, Qwen3ByteLevelMatchesTokenizerJson) {
  auto f = load("qwen3", /*without_normalizer=*/true);
  if (!f) GTEST_SKIP() << "no qwen3 fixture";
  GgufTokenizerSpec s = spec_from_tokenizer_json(f->doc, "gpt2", "qwen2");
  s.merges = merges_of(f->doc);
  s.eos_id = 151645;
  s.add_bos = false;
  const GgufTokenizer t = tokenizer_from_gguf(s, "qwen3 as GGUF");
  EXPECT_EQ(compare(t.tokenizer, f->direct, texts_for("qwen3")), 0u);
}

TEST(GgufTokenizerSpecs, Llama2SentencePieceMatchesTokenizerJson) {
  auto f = load("llama2");
  if (!f) GTEST_SKIP() << "no llama2 fixture";
  GgufTokenizerSpec s = spec_from_tokenizer_json(f->doc, "llama", "");
  s.bos_id = 1;
  s.eos_id = 2;
  s.unk_id = 0;
  // As llama.cpp's converter writes a SentencePiece vocabulary: scores, no merges, BOS by default.
  const GgufTokenizer derived = tokenizer_from_gguf(s, "llama2 as GGUF");
  EXPECT_TRUE(derived.add_bos);
  EXPECT_EQ(derived.tokenizer.vocab_size(), f->direct.vocab_size());
  const std::vector<std::string> texts = texts_for("llama2");
  EXPECT_EQ(compare(derived.tokenizer, f->direct, texts), 0u) << "merges derived from the scores";
  s.merges = merges_of(f->doc);
  EXPECT_EQ(compare(tokenizer_from_gguf(s, "llama2 as GGUF").tokenizer, f->direct, texts), 0u) << "merges given";
}

TEST(GgufTokenizerSpecs, MergesFromScoresRankByMergedScoreThenPieceLengths) {
  const std::vector<std::string> tokens = {"a", "b", "c", "ab", "bc", "abc"};
  const std::vector<float> scores = {0, 0, 0, -1, -2, -3};
  const std::vector<std::pair<std::string, std::string>> want = {{"a", "b"}, {"b", "c"}, {"ab", "c"}, {"a", "bc"}};
  EXPECT_EQ(merges_from_scores(tokens, scores), want);
}

void expect_refused(const GgufTokenizerSpec& s, const std::string& fragment) {
  try {
    (void)tokenizer_from_gguf(s, "x.gguf");
    ADD_FAILURE() << "accepted; expected an error containing " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

GgufTokenizerSpec tiny() {
  GgufTokenizerSpec s;
  s.model = "gpt2";
  s.pre = "smollm";
  s.tokens = {"a", "b", "ab", "<|end|>"};
  s.token_types = {1, 1, 1, 3};
  s.merges = {"a b"};
  s.eos_id = 3;
  return s;
}

TEST(GgufTokenizerSpecs, TinyByteLevel) {
  const GgufTokenizer t = tokenizer_from_gguf(tiny(), "x.gguf");
  EXPECT_EQ(t.tokenizer.encode("ab<|end|>", false), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(t.stop_ids, std::vector<int32_t>{3});
  EXPECT_EQ(t.chat.eos_token, "<|end|>");
  EXPECT_TRUE(t.tokenizer.is_special(3));
}

TEST(GgufTokenizerSpecs, Refusals) {
  GgufTokenizerSpec s = tiny();
  s.pre = "no-such-pre";
  expect_refused(s, "tokenizer.ggml.pre \"no-such-pre\"");
  s = tiny();
  s.model = "bert";
  expect_refused(s, "tokenizer.ggml.model \"bert\"");
  s = tiny();
  s.token_types.pop_back();
  expect_refused(s, "tokenizer.ggml.token_type has 3 entries for 4 tokens");
  s = tiny();
  s.token_types[0] = 9;
  expect_refused(s, "token_type[0] = 9");
  s = tiny();
  s.eos_id = 4;
  expect_refused(s, "tokenizer.ggml.eos_token_id = 4");
  s = tiny();
  s.merges = {"ab"};
  expect_refused(s, "tokenizer.ggml.merges[0]");
  s = tiny();
  s.tokens[2] = "a";
  s.merges.clear();
  expect_refused(s, "spells ids 0 and 2 the same");
  s = tiny();
  s.add_bos = true;
  expect_refused(s, "bos_token_id is missing");
  s = tiny();
  s.model = "llama";
  s.merges.clear();
  expect_refused(s, "needs tokenizer.ggml.merges or tokenizer.ggml.scores");
}

}  // namespace
}  // namespace fg
