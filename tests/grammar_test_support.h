// tests/grammar_test_support.h — shared by the grammar tests: one compiler per fixture tokenizer
// (building one reads every token, about a second on the large vocabularies), and helpers that
// feed token ids to a matcher and read its mask.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar_compiler.h"
#include "grammar/grammar_matcher.h"
#include "grammar/grammar_vocabulary.h"
#include "test_support.h"

namespace fg::test {

// The EOS ids of each fixture tokenizer's models (what generation_config.json lists upstream).
inline std::vector<int32_t> fixture_eos_ids(const std::string& name) {
  const Tokenizer& tok = tokenizer_fixture(name);
  std::vector<int32_t> ids;
  for (const char* token : {"</s>", "<|end_of_text|>", "<|eot_id|>", "<|im_end|>", "<|endoftext|>"})
    if (auto id = tok.token_to_id(token)) ids.push_back(*id);
  return ids;
}

// The logits width of the fixture's model: Qwen3's (151936) exceeds its tokenizer's 151669 ids.
inline int64_t fixture_model_vocab(const std::string& name) {
  return name == "qwen3" ? 151936 : tokenizer_fixture(name).vocab_size();
}

inline const GrammarVocabulary& vocabulary_fixture(const std::string& name) {
  static std::map<std::string, GrammarVocabulary> made;
  auto it = made.find(name);
  if (it == made.end())
    it = made.emplace(name, grammar_vocabulary(tokenizer_fixture(name), fixture_model_vocab(name),
                                               fixture_eos_ids(name))).first;
  return it->second;
}

inline GrammarCompiler& compiler_fixture(const std::string& name) {
  static std::map<std::string, std::unique_ptr<GrammarCompiler>> made;
  auto& slot = made[name];
  if (!slot) slot = std::make_unique<GrammarCompiler>(vocabulary_fixture(name), GrammarCompilerOptions{.threads = 2});
  return *slot;
}

inline StructuredOutput constraint(StructuredOutputKind kind, std::string text) {
  return StructuredOutput{kind, std::move(text), "test"};
}

// Feeds `ids` in order; how many were accepted before the first refusal.
inline size_t accept_all(GrammarMatcher& m, const std::vector<int32_t>& ids) {
  size_t n = 0;
  while (n < ids.size() && m.accept_token(ids[n])) ++n;
  return n;
}

inline std::vector<int32_t> mask_of(GrammarMatcher& m) {
  std::vector<int32_t> row(static_cast<size_t>(bitmask_words(m.vocab_size())), 0x5a5a5a5a);
  m.fill_next_token_bitmask(row.data());
  return row;
}

inline bool allowed(const std::vector<int32_t>& row, int64_t id) {
  return (static_cast<uint32_t>(row[static_cast<size_t>(id / 32)]) >> (id % 32)) & 1u;
}

}  // namespace fg::test
