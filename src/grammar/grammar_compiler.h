// grammar/grammar_compiler.h — turns a request's constraint (StructuredOutput) into a compiled
// grammar for one model's vocabulary, through xgrammar's compiler, with a cache keyed by the
// constraint (kind, text, any_whitespace): the server compiles each constraint when the request arrives, to
// refuse a bad one before it is queued, and the engine's later compile of it is a cache hit.
//
// Thread-safe: any number of threads may compile at once. Concurrent requests for one constraint
// compile it once (the others wait for that result); distinct constraints compile in parallel.
// The cache holds at most `cache_bytes` of compiled grammars (xgrammar's estimate of their size),
// dropping the least recently used; a failed compile is not cached.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar_vocabulary.h"
#include "grammar/structured_output.h"

namespace fg {

class CompiledGrammar;  // grammar/compiled_grammar.h; opaque outside grammar/

struct GrammarCompilerOptions {
  int threads = 2;                          // xgrammar's worker threads for one compile
  int64_t cache_bytes = int64_t{256} << 20;  // compiled grammars kept (0: none kept)
};

struct GrammarCacheStats {
  int64_t entries = 0, bytes = 0, hits = 0, misses = 0;
};

class GrammarCompiler {
 public:
  explicit GrammarCompiler(const GrammarVocabulary& vocabulary, GrammarCompilerOptions options = {});
  ~GrammarCompiler();
  GrammarCompiler(const GrammarCompiler&) = delete;
  GrammarCompiler& operator=(const GrammarCompiler&) = delete;

  // The compiled grammar of `constraint`. Throws fg::Error when it does not compile, saying what
  // is wrong in at most a few hundred bytes ("invalid JSON schema: ...", "invalid regular
  // expression: ...", "invalid EBNF grammar: ...", "invalid choice list: ..."), never the whole
  // text; the caller adds which field it came from.
  std::shared_ptr<const CompiledGrammar> compile(const StructuredOutput& constraint);

  int64_t vocab_size() const;
  GrammarCacheStats cache_stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The EBNF grammar (root rule "root") whose language is exactly the strings in `choices`.
std::string choice_grammar(const std::vector<std::string>& choices);

}  // namespace fg
