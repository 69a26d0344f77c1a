// tests/test_grammar_matcher.cpp — constraints compiled by xgrammar on the fixture tokenizers
// (grammar/grammar_compiler.h, grammar/grammar_matcher.h): a JSON schema accepts the tokens of a
// valid document and refuses an invalid one; the mask is checked against the matcher itself (at
// several states, for every id of the vocabulary: bit set iff accept_token takes it, undone by
// rollback); EOS is allowed exactly where the output may end; a regex, a choice and an EBNF
// grammar each constrain; a constraint that does not compile is an fg::Error naming what is wrong,
// briefly; the cache compiles a constraint once.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "grammar_test_support.h"

namespace fg {
namespace {

using K = StructuredOutputKind;
using test::accept_all;
using test::allowed;
using test::constraint;
using test::mask_of;

const char* kSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer", "minimum": 0},
    "tags": {"type": "array", "items": {"type": "string"}}
  },
  "required": ["name", "age"],
  "additionalProperties": false
})";

std::vector<int32_t> encode(const std::string& tokenizer, const std::string& text) {
  return test::tokenizer_fixture(tokenizer).encode(text, /*add_special_tokens=*/false);
}

// Ids whose bytes spell `text`, longest token first: a tokenization the grammar sees as `text`
// (SentencePiece's encoding starts with "▁", a space no JSON grammar allows first).
std::vector<int32_t> spell(const std::string& tokenizer, const std::string& text) {
  const GrammarVocabulary& vocab = test::vocabulary_fixture(tokenizer);
  std::vector<int32_t> ids;
  for (size_t at = 0; at < text.size();) {
    int32_t best = -1;
    size_t best_len = 0;
    for (int32_t id = 0; id < vocab.vocab_size(); ++id) {
      const std::string& b = vocab.token_bytes[static_cast<size_t>(id)];
      if (b.size() > best_len && text.compare(at, b.size(), b) == 0) best = id, best_len = b.size();
    }
    if (best < 0) ADD_FAILURE() << "no token spells byte " << at << " of " << text;
    if (best < 0) return ids;
    ids.push_back(best);
    at += best_len;
  }
  return ids;
}

// The oracle: every id of the vocabulary, bit set iff the matcher accepts the id (then undone).
void expect_mask_matches_matcher(GrammarMatcher& m, const std::string& where) {
  const std::vector<int32_t> row = mask_of(m);
  int64_t mismatches = 0, set = 0;
  for (int32_t id = 0; id < m.vocab_size(); ++id) {
    const bool accepted = m.accept_token(id);
    if (accepted) m.rollback(1);
    set += allowed(row, id);
    if (accepted != allowed(row, id) && ++mismatches <= 5)
      ADD_FAILURE() << where << ": id " << id << " mask " << allowed(row, id) << " accept " << accepted;
  }
  EXPECT_EQ(mismatches, 0) << where;
  EXPECT_GT(set, 0) << where;
  // The last word's bits past the vocabulary are clear.
  for (int64_t id = m.vocab_size(); id < bitmask_words(m.vocab_size()) * 32; ++id)
    EXPECT_FALSE(allowed(row, id)) << where << ": bit " << id << " past the vocabulary";
}

bool eos_allowed(GrammarMatcher& m, const std::string& tokenizer) {
  const std::vector<int32_t> row = mask_of(m);
  const auto& stops = test::vocabulary_fixture(tokenizer).stop_token_ids;
  bool any = false;
  for (int32_t id : stops) {
    any = any || allowed(row, id);
    EXPECT_EQ(allowed(row, id), allowed(row, stops.front())) << "EOS ids differ";
  }
  return any;
}

TEST(GrammarMatcher, JsonSchemaAcceptsAValidDocumentAndRefusesAnInvalidOne) {
  for (const std::string name : {"llama3_1", "qwen3", "llama2"}) {
    GrammarCompiler& compiler = test::compiler_fixture(name);
    const auto grammar = compiler.compile(constraint(K::kJsonSchema, kSchema));
    const std::string valid = R"({"name": "Zoë 🎉", "age": 42, "tags": ["x", "y z"]})";
    const std::vector<int32_t> ids = name == "llama2" ? spell(name, valid) : encode(name, valid);
    GrammarMatcher m(grammar);
    ASSERT_EQ(accept_all(m, ids), ids.size()) << name;
    EXPECT_TRUE(eos_allowed(m, name)) << name;
    EXPECT_TRUE(m.accept_token(test::vocabulary_fixture(name).stop_token_ids.front()));
    EXPECT_TRUE(m.is_terminated());
    EXPECT_FALSE(m.accept_token(ids.front())) << "nothing follows the EOS";
    EXPECT_THROW(mask_of(m), Error);

    // "age" must be an integer, and "extra" is not a property.
    for (const std::string bad : {R"({"name": "x", "age": "42"})", R"({"name": "x", "age": 1, "extra": 2})",
                                  R"({"age": 1})"}) {
      const std::vector<int32_t> bad_ids = name == "llama2" ? spell(name, bad) : encode(name, bad);
      GrammarMatcher b(grammar);
      const size_t taken = accept_all(b, bad_ids);
      const bool complete = taken == bad_ids.size() && eos_allowed(b, name);
      EXPECT_FALSE(complete) << name << ": " << bad;
    }
  }
}

TEST(GrammarMatcher, MaskIsExactlyWhatTheMatcherAcceptsOverTheWholeVocabulary) {
  // Every id at each state: ~32k ids on Llama-2, ~152k on Qwen3 (about a second per state).
  for (const std::string name : {"llama2", "qwen3"}) {
    const auto grammar = test::compiler_fixture(name).compile(constraint(K::kJsonSchema, kSchema));
    const std::string doc = R"({"name": "Zoë", "age": 7, "tags": []})";
    const std::vector<int32_t> ids = name == "llama2" ? spell(name, doc) : encode(name, doc);
    GrammarMatcher m(grammar);
    // At the start, inside the first key, inside a string value with a multi-byte character
    // split or not, inside the number, and at the end (where only EOS may follow).
    const size_t n = ids.size();
    for (size_t stop : {size_t{0}, size_t{1}, size_t{2}, n / 2, n - 2, n}) {
      m.reset();
      ASSERT_EQ(accept_all(m, std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<long>(stop))), stop);
      expect_mask_matches_matcher(m, name + " after " + std::to_string(stop) + " tokens");
    }
  }
}

TEST(GrammarMatcher, EosOnlyWhereTheGrammarMayEnd) {
  const std::string name = "llama3_1";
  const auto grammar = test::compiler_fixture(name).compile(constraint(K::kRegex, "[0-9]{2,3}"));
  GrammarMatcher m(grammar);
  EXPECT_FALSE(eos_allowed(m, name));
  ASSERT_EQ(accept_all(m, {*test::tokenizer_fixture(name).token_to_id("1")}), 1u);
  EXPECT_FALSE(eos_allowed(m, name)) << "one digit is too few";
  ASSERT_EQ(accept_all(m, {*test::tokenizer_fixture(name).token_to_id("2")}), 1u);
  EXPECT_TRUE(eos_allowed(m, name)) << "two digits may end";
  ASSERT_EQ(accept_all(m, {*test::tokenizer_fixture(name).token_to_id("3")}), 1u);
  // Three digits must end: only the EOS ids are allowed.
  const std::vector<int32_t> row = mask_of(m);
  int64_t set = 0;
  for (int32_t id = 0; id < m.vocab_size(); ++id) set += allowed(row, id);
  EXPECT_EQ(set, static_cast<int64_t>(test::vocabulary_fixture(name).stop_token_ids.size()));
  EXPECT_TRUE(eos_allowed(m, name));
  m.rollback(2);
  EXPECT_FALSE(eos_allowed(m, name));
}

TEST(GrammarMatcher, RegexChoiceAndEbnfConstrain) {
  const std::string name = "qwen3";
  GrammarCompiler& compiler = test::compiler_fixture(name);
  struct Case {
    StructuredOutput c;
    std::vector<std::string> good, bad;
  };
  const std::vector<Case> cases = {
      {constraint(K::kRegex, R"(\d{3}-[a-z]+(\.[a-z]+)?)"), {"123-abc", "007-x.yz"}, {"12-abc", "123-ABC", "123-a."}},
      {constraint(K::kChoice, R"(["yes", "no", "maybe \"so\"", "ünï\n"])"), {"yes", "maybe \"so\"", "ünï\n"},
       {"ye", "yes!", "nope"}},
      {constraint(K::kGrammar, "root ::= \"(\" root \")\" | item\nitem ::= [a-c]+"), {"((ab))", "c"}, {"((a)", "(d)"}},
  };
  for (const Case& c : cases) {
    const auto grammar = compiler.compile(c.c);
    for (const std::string& text : c.good) {
      GrammarMatcher m(grammar);
      const std::vector<int32_t> ids = encode(name, text);
      EXPECT_EQ(accept_all(m, ids), ids.size()) << kind_name(c.c.kind) << ": " << text;
      EXPECT_TRUE(eos_allowed(m, name)) << kind_name(c.c.kind) << ": " << text;
    }
    for (const std::string& text : c.bad) {
      GrammarMatcher m(grammar);
      const std::vector<int32_t> ids = encode(name, text);
      const bool complete = accept_all(m, ids) == ids.size() && eos_allowed(m, name);
      EXPECT_FALSE(complete) << kind_name(c.c.kind) << ": " << text;
    }
  }
}

std::string compile_error(const StructuredOutput& c) {
  try {
    test::compiler_fixture("llama2").compile(c);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GrammarCompiler, ABadConstraintIsAnErrorNamingWhatIsWrong) {
  const std::string huge(100000, 'x');
  const struct {
    StructuredOutput c;
    std::string says;
  } cases[] = {
      {constraint(K::kJsonSchema, "{\"type\": "), "invalid JSON schema"},
      {constraint(K::kJsonSchema, R"({"type": "strnig"})"), "invalid JSON schema"},
      {constraint(K::kJsonSchema, R"({"$ref": "#/$defs/missing"})"), "invalid JSON schema"},
      {constraint(K::kRegex, "(ab"), "invalid regular expression"},
      {constraint(K::kRegex, "[z-a]"), "invalid regular expression"},
      {constraint(K::kGrammar, "root ::= undefined_rule"), "invalid EBNF grammar"},
      {constraint(K::kGrammar, "root ::= \"a"), "invalid EBNF grammar"},
      {constraint(K::kGrammar, "start ::= \"a\""), "invalid EBNF grammar"},
      {constraint(K::kChoice, "[]"), "invalid choice list"},
      {constraint(K::kChoice, "[1]"), "invalid choice list"},
      {constraint(K::kGrammar, "root ::= " + huge), "invalid EBNF grammar"},
      {constraint(K::kJsonSchema, "{\"type\": \"" + huge + "\"}"), "invalid JSON schema"},
  };
  for (const auto& c : cases) {
    const std::string message = compile_error(c.c);
    EXPECT_NE(message.find(c.says), std::string::npos) << c.c.text.substr(0, 60) << " -> " << message;
    EXPECT_LT(message.size(), 600u) << message.substr(0, 200);
  }
}

TEST(GrammarCompiler, CompilesEachConstraintOnceAndSharesIt) {
  GrammarVocabulary vocab = test::vocabulary_fixture("llama2");
  GrammarCompiler compiler(vocab, {.threads = 1});
  const StructuredOutput c = constraint(K::kRegex, "[a-z]{1,8}");
  std::vector<std::shared_ptr<const CompiledGrammar>> got(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) threads.emplace_back([&, i] { got[i] = compiler.compile(c); });
  for (auto& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, got.front());
  StructuredOutput same_text_other_source = c;
  same_text_other_source.source = "guided_regex";
  EXPECT_EQ(compiler.compile(same_text_other_source), got.front());
  EXPECT_NE(compiler.compile(constraint(K::kGrammar, "root ::= [a-z]")), got.front());
  const GrammarCacheStats stats = compiler.cache_stats();
  EXPECT_EQ(stats.misses, 2);
  EXPECT_EQ(stats.hits, 4);
  EXPECT_EQ(stats.entries, 2);
  EXPECT_GT(stats.bytes, 0);
  // A failed compile is not kept.
  EXPECT_THROW(compiler.compile(constraint(K::kRegex, "(")), Error);
  EXPECT_EQ(compiler.cache_stats().entries, 2);

  // A cache too small for anything keeps nothing, and still compiles.
  GrammarCompiler tiny(vocab, {.threads = 1, .cache_bytes = 0});
  EXPECT_NE(tiny.compile(c), nullptr);
  EXPECT_EQ(tiny.cache_stats().entries, 0);
}

TEST(GrammarMatcher, MatchersOfOneGrammarRunOnSeveralThreads) {
  const auto grammar = test::compiler_fixture("llama3_1").compile(constraint(K::kJsonSchema, kSchema));
  const std::vector<int32_t> ids = encode("llama3_1", R"({"name": "a", "age": 1})");
  std::atomic<int> complete{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      GrammarMatcher m(grammar);
      std::vector<int32_t> row(static_cast<size_t>(bitmask_words(m.vocab_size())));
      bool ok = true;
      for (int32_t id : ids) {
        m.fill_next_token_bitmask(row.data());
        ok = ok && allowed(row, id) && m.accept_token(id);
      }
      if (ok) ++complete;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(complete.load(), 4);
}

}  // namespace
}  // namespace fg
