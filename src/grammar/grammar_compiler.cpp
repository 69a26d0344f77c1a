// grammar/grammar_compiler.cpp — see grammar_compiler.h.
#include "grammar/grammar_compiler.h"

#include <fmt/format.h>
#include <xgrammar/compiler.h>
#include <xgrammar/tokenizer_info.h>

#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/error.h"
#include "grammar/compiled_grammar.h"
#include "grammar/xgrammar_log.h"

namespace fg {

namespace {

using Compiled = std::shared_ptr<const CompiledGrammar>;

// xgrammar reads each token as given (VocabType::RAW): our vocabulary holds bytes already.
xgrammar::TokenizerInfo tokenizer_info(const GrammarVocabulary& vocabulary) {
  return xgrammar::TokenizerInfo(vocabulary.token_bytes, xgrammar::VocabType::RAW,
                                 static_cast<int>(vocabulary.vocab_size()), vocabulary.stop_token_ids,
                                 /*add_prefix_space=*/false);
}

std::shared_ptr<const GrammarTokenFacts> token_facts(const GrammarVocabulary& vocabulary) {
  auto facts = std::make_shared<GrammarTokenFacts>();
  facts->vocab_size = vocabulary.vocab_size();
  facts->never_text.resize(static_cast<size_t>(facts->vocab_size));
  facts->is_stop.resize(static_cast<size_t>(facts->vocab_size));
  for (size_t i = 0; i < vocabulary.token_bytes.size(); ++i) facts->never_text[i] = vocabulary.token_bytes[i].empty();
  for (int32_t id : vocabulary.stop_token_ids) facts->is_stop[static_cast<size_t>(id)] = true;
  return facts;
}

// The strings of a choice constraint's text (a JSON array of strings, at least one).
std::vector<std::string> read_choices(const std::string& text) {
  const nlohmann::json list = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  FG_CHECK(list.is_array() && !list.empty(), "invalid choice list: expected a non-empty JSON array of strings");
  std::vector<std::string> choices;
  for (const auto& item : list) {
    FG_CHECK(item.is_string(), "invalid choice list: every choice must be a string");
    choices.push_back(item.get<std::string>());
  }
  return choices;
}

const char* what_kind(StructuredOutputKind kind) {
  switch (kind) {
    case StructuredOutputKind::kJsonObject: return "JSON object constraint";
    case StructuredOutputKind::kJsonSchema: return "JSON schema";
    case StructuredOutputKind::kRegex: return "regular expression";
    case StructuredOutputKind::kChoice: return "choice list";
    case StructuredOutputKind::kGrammar: return "EBNF grammar";
  }
  return "constraint";
}

}  // namespace

std::string_view kind_name(StructuredOutputKind kind) {
  switch (kind) {
    case StructuredOutputKind::kJsonObject: return "json_object";
    case StructuredOutputKind::kJsonSchema: return "json_schema";
    case StructuredOutputKind::kRegex: return "regex";
    case StructuredOutputKind::kChoice: return "choice";
    case StructuredOutputKind::kGrammar: return "grammar";
  }
  return "unknown";
}

std::string choice_grammar(const std::vector<std::string>& choices) {
  FG_CHECK(!choices.empty(), "invalid choice list: it is empty");
  std::string out = "root ::= ";
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += " | ";
    out += '"';
    for (char c : choices[i]) {
      const auto u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (u < 0x20 || u == 0x7f) {
        out += fmt::format("\\u{:04x}", u);  // \x would read on into following hex digits
      } else {
        out += c;  // UTF-8 bytes of other characters stand for themselves
      }
    }
    out += '"';
  }
  return out;
}

struct GrammarCompiler::Impl {
  Impl(const GrammarVocabulary& vocabulary, GrammarCompilerOptions opts)
      : options(opts),
        tokens(token_facts(vocabulary)),
        compiler(tokenizer_info(vocabulary), std::max(1, opts.threads), /*cache_enabled=*/false) {}

  Compiled build(const StructuredOutput& c) {
    try {
      switch (c.kind) {
        case StructuredOutputKind::kJsonObject:
          // vLLM's reading of OpenAI's json_object: any JSON object.
          return wrap(compiler.CompileJSONSchema(R"({"type": "object"})", c.any_whitespace));
        case StructuredOutputKind::kJsonSchema:
          // Any whitespace between tokens unless the request disables it (then JSON's compact
          // separators), additional properties only where the schema allows them (strict mode):
          // vLLM's defaults.
          return wrap(compiler.CompileJSONSchema(c.text, c.any_whitespace));
        case StructuredOutputKind::kRegex: return wrap(compiler.CompileRegex(c.text));
        case StructuredOutputKind::kChoice: return wrap(compiler.CompileGrammar(choice_grammar(read_choices(c.text))));
        case StructuredOutputKind::kGrammar: return wrap(compiler.CompileGrammar(c.text, "root"));
      }
    } catch (const std::exception& e) {
      const std::string message = grammar_detail::xgrammar_message(e);
      // Our own checks already say "invalid <kind>: ...".
      if (message.starts_with("invalid ")) throw Error(message);
      throw Error(fmt::format("invalid {}: {}", what_kind(c.kind), message));
    }
    fail("unknown structured output kind {}", static_cast<int>(c.kind));
  }

  Compiled wrap(xgrammar::CompiledGrammar grammar) const {
    return std::make_shared<const CompiledGrammar>(std::move(grammar), tokens);
  }

  using Key = std::tuple<StructuredOutputKind, bool, std::string>;  // kind, any_whitespace, text
  struct Entry {
    std::shared_future<Compiled> result;
    bool ready = false;
    int64_t bytes = 0;
    uint64_t last_use = 0;
  };

  // Drops the least recently used finished entries until the cache fits. Callers hold `mutex`.
  void evict() {
    while (bytes > options.cache_bytes) {
      auto victim = entries.end();
      for (auto it = entries.begin(); it != entries.end(); ++it)
        if (it->second.ready && (victim == entries.end() || it->second.last_use < victim->second.last_use)) victim = it;
      if (victim == entries.end()) return;
      bytes -= victim->second.bytes;
      entries.erase(victim);
    }
  }

  const GrammarCompilerOptions options;
  const std::shared_ptr<const GrammarTokenFacts> tokens;
  xgrammar::GrammarCompiler compiler;  // thread-safe; its own cache is off (ours is keyed by the request's text)

  mutable std::mutex mutex;  // guards what follows
  std::map<Key, Entry> entries;
  int64_t bytes = 0;
  uint64_t clock = 0;
  GrammarCacheStats stats;
};

GrammarCompiler::GrammarCompiler(const GrammarVocabulary& vocabulary, GrammarCompilerOptions options) {
  FG_CHECK(vocabulary.vocab_size() > 0, "grammar compiler: the vocabulary is empty");
  try {
    impl_ = std::make_unique<Impl>(vocabulary, options);
  } catch (const std::exception& e) {
    fail("grammar compiler: xgrammar refused the vocabulary: {}", grammar_detail::xgrammar_message(e));
  }
}

GrammarCompiler::~GrammarCompiler() = default;

std::shared_ptr<const CompiledGrammar> GrammarCompiler::compile(const StructuredOutput& constraint) {
  Impl& m = *impl_;
  Impl::Key key{constraint.kind, constraint.any_whitespace, constraint.text};
  std::promise<Compiled> promise;
  {
    std::unique_lock lock(m.mutex);
    if (auto it = m.entries.find(key); it != m.entries.end()) {
      ++m.stats.hits;
      it->second.last_use = ++m.clock;
      std::shared_future<Compiled> result = it->second.result;
      lock.unlock();
      return result.get();  // waits while another thread compiles it; rethrows its failure
    }
    ++m.stats.misses;
    m.entries.emplace(key, Impl::Entry{promise.get_future().share(), false, 0, ++m.clock});
  }
  Compiled compiled;
  try {
    compiled = m.build(constraint);
  } catch (...) {
    {
      std::lock_guard lock(m.mutex);
      m.entries.erase(key);
    }
    promise.set_exception(std::current_exception());
    throw;
  }
  {
    std::lock_guard lock(m.mutex);
    if (auto it = m.entries.find(key); it != m.entries.end()) {
      it->second.ready = true;
      it->second.bytes = compiled->memory_bytes() + static_cast<int64_t>(std::get<2>(key).size());
      m.bytes += it->second.bytes;
      m.evict();
    }
  }
  promise.set_value(compiled);
  return compiled;
}

int64_t GrammarCompiler::vocab_size() const { return impl_->tokens->vocab_size; }

GrammarCacheStats GrammarCompiler::cache_stats() const {
  std::lock_guard lock(impl_->mutex);
  GrammarCacheStats s = impl_->stats;
  s.entries = static_cast<int64_t>(impl_->entries.size());
  s.bytes = impl_->bytes;
  return s;
}

}  // namespace fg
