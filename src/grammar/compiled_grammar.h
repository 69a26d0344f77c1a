// grammar/compiled_grammar.h — a compiled constraint, shared by every matcher of the requests
// that carry it (for grammar/ only: it holds xgrammar's types; other layers see it opaquely
// through std::shared_ptr<const CompiledGrammar>). Immutable once made.
#pragma once

#include <xgrammar/compiler.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace fg {

// The facts about the vocabulary that a matcher checks before it asks xgrammar, so that a token
// xgrammar would refuse with a warning line (special, out of range) is refused quietly.
struct GrammarTokenFacts {
  int64_t vocab_size = 0;
  std::vector<bool> never_text;  // [vocab_size]: no bytes (special tokens, ids past the tokenizer)
  std::vector<bool> is_stop;     // [vocab_size]: an EOS id
};

class CompiledGrammar {
 public:
  CompiledGrammar(xgrammar::CompiledGrammar grammar, std::shared_ptr<const GrammarTokenFacts> tokens)
      : grammar_(std::move(grammar)), tokens_(std::move(tokens)) {}

  const xgrammar::CompiledGrammar& grammar() const { return grammar_; }
  const GrammarTokenFacts& tokens() const { return *tokens_; }
  int64_t vocab_size() const { return tokens_->vocab_size; }
  int64_t memory_bytes() const { return static_cast<int64_t>(grammar_.MemorySizeBytes()); }

 private:
  xgrammar::CompiledGrammar grammar_;
  std::shared_ptr<const GrammarTokenFacts> tokens_;
};

}  // namespace fg
