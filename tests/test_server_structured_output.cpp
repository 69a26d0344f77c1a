// tests/test_server_structured_output.cpp — output constraints on the request surface: every
// spelling (OpenAI's response_format, vLLM's structured_outputs and its older guided_* fields) on
// both endpoints and in `generate --prompts` lines reads to the same StructuredOutput; every
// malformed one, two constraints at once, and a constraint that does not compile are 400s naming
// the field; a model without a grammar compiler refuses constraints.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/request_json.h"
#include "grammar/grammar_compiler.h"
#include "grammar/grammar_vocabulary.h"
#include "server_test_support.h"

namespace fg::server {
namespace {

using nlohmann::json;
using testing::expect_api_error;
using K = StructuredOutputKind;

const json kSchema = {{"type", "object"},
                      {"properties", {{"a", {{"type", "integer"}}}}},
                      {"required", {"a"}}};

class StructuredOutputs : public testing::ModelFixture {
 protected:
  StructuredOutputs() {
    const std::vector<int32_t> eos = {511};
    compiler_ = std::make_unique<GrammarCompiler>(grammar_vocabulary(tokenizer_, model_.vocab_size, eos),
                                                  GrammarCompilerOptions{.threads = 1});
    model_.grammar = compiler_.get();
  }

  // The constraint a request with `fields` reads to, on both endpoints (which must agree).
  std::optional<StructuredOutput> read(const json& fields) {
    json completion = {{"prompt", "hi"}};
    json chat_body = {{"messages", user("hi")}};
    for (const auto& [key, value] : fields.items()) completion[key] = chat_body[key] = value;
    const std::optional<StructuredOutput> a = completion_request(completion).spec.structured_output;
    const std::optional<StructuredOutput> b = chat(chat_body).spec.structured_output;
    EXPECT_EQ(a.has_value(), b.has_value()) << fields.dump();
    if (a && b) {
      EXPECT_EQ(*a, *b) << fields.dump();
      EXPECT_EQ(a->source, b->source) << fields.dump();
    }
    return a;
  }
  ParsedRequest completion_request(const json& body) { return completion(body); }

  void expect_reads(const json& fields, K kind, const std::string& text, const std::string& source) {
    const std::optional<StructuredOutput> c = read(fields);
    ASSERT_TRUE(c.has_value()) << fields.dump();
    EXPECT_EQ(c->kind, kind) << fields.dump();
    EXPECT_EQ(c->text, text) << fields.dump();
    EXPECT_EQ(c->source, source) << fields.dump();
  }

  // A 400 naming `param` on both endpoints; returns the completion endpoint's message.
  std::string expect_refused(const json& fields, const std::string& param) {
    json completion = {{"prompt", "hi"}};
    json chat_body = {{"messages", user("hi")}};
    for (const auto& [key, value] : fields.items()) completion[key] = chat_body[key] = value;
    expect_api_error([&] { chat(chat_body); }, 400, param, "chat " + fields.dump());
    return expect_api_error([&] { completion_request(completion); }, 400, param, fields.dump()).what();
  }

  std::unique_ptr<GrammarCompiler> compiler_;
};

TEST_F(StructuredOutputs, EverySpellingReadsToOneConstraint) {
  const std::string schema = kSchema.dump();
  expect_reads({{"response_format", {{"type", "json_object"}}}}, K::kJsonObject, "", "response_format");
  expect_reads({{"response_format",
                 {{"type", "json_schema"},
                  {"json_schema", {{"name", "point"}, {"description", "d"}, {"strict", true}, {"schema", kSchema}}}}}},
               K::kJsonSchema, schema, "response_format.json_schema.schema");
  expect_reads({{"structured_outputs", {{"json", kSchema}}}}, K::kJsonSchema, schema, "structured_outputs.json");
  expect_reads({{"structured_outputs", {{"json", schema}}}}, K::kJsonSchema, schema, "structured_outputs.json");
  expect_reads({{"structured_outputs", {{"regex", "[a-z]+"}, {"disable_fallback", true}}}}, K::kRegex, "[a-z]+",
               "structured_outputs.regex");
  expect_reads({{"structured_outputs", {{"choice", {"yes", "no"}}}}}, K::kChoice, R"(["yes","no"])",
               "structured_outputs.choice");
  expect_reads({{"structured_outputs", {{"grammar", "root ::= \"a\""}}}}, K::kGrammar, "root ::= \"a\"",
               "structured_outputs.grammar");
  expect_reads({{"structured_outputs", {{"json_object", true}}}}, K::kJsonObject, "", "structured_outputs.json_object");
  expect_reads({{"guided_json", kSchema}}, K::kJsonSchema, schema, "guided_json");
  expect_reads({{"guided_json", schema}}, K::kJsonSchema, schema, "guided_json");
  expect_reads({{"guided_regex", "\\d+"}, {"guided_decoding_backend", "xgrammar"}}, K::kRegex, "\\d+", "guided_regex");
  expect_reads({{"guided_choice", {"a", "b c"}}}, K::kChoice, R"(["a","b c"])", "guided_choice");
  expect_reads({{"guided_grammar", "root ::= [0-9]+"}}, K::kGrammar, "root ::= [0-9]+", "guided_grammar");
  // No constraint: text, a false json_object, nulls, the backend alone.
  for (const json& none : {json{{"response_format", {{"type", "text"}}}},
                           json{{"structured_outputs", {{"json_object", false}}}},
                           json{{"response_format", nullptr}, {"guided_json", nullptr}},
                           json{{"structured_outputs", json::object()}},
                           json{{"guided_decoding_backend", "outlines"}}, json::object()})
    EXPECT_FALSE(read(none).has_value()) << none.dump();
}

TEST_F(StructuredOutputs, ReadTheSameInGeneratePromptsLines) {
  RequestSpec spec;
  read_request_fields(json{{"guided_choice", {"x", "y"}}, {"max_tokens", 4}}, spec);
  ASSERT_TRUE(spec.structured_output.has_value());
  EXPECT_EQ(spec.structured_output->kind, K::kChoice);
  EXPECT_EQ(spec.structured_output->source, "guided_choice");
  try {
    RequestSpec other;
    read_request_fields(json{{"response_format", {{"type", "json_object"}}}, {"guided_regex", "a"}}, other);
    ADD_FAILURE() << "two constraints accepted";
  } catch (const RequestFieldError& e) {
    EXPECT_EQ(e.param(), "guided_regex");
  }
}

TEST_F(StructuredOutputs, TwoConstraintsAreRefusedNamingBoth) {
  const struct {
    json fields;
    std::string param, first;
  } cases[] = {
      {{{"response_format", {{"type", "json_object"}}}, {"guided_regex", "a"}}, "guided_regex", "response_format"},
      {{{"structured_outputs", {{"json", kSchema}, {"regex", "a"}}}}, "structured_outputs.regex",
       "structured_outputs.json"},
      {{{"guided_json", kSchema}, {"guided_choice", {"a"}}}, "guided_choice", "guided_json"},
      {{{"structured_outputs", {{"grammar", "root ::= \"a\""}}}, {"guided_grammar", "root ::= \"a\""}},
       "guided_grammar", "structured_outputs.grammar"},
  };
  for (const auto& c : cases) {
    const std::string message = expect_refused(c.fields, c.param);
    EXPECT_NE(message.find(c.first), std::string::npos) << message;
    EXPECT_NE(message.find(c.param), std::string::npos) << message;
  }
}

TEST_F(StructuredOutputs, MalformedFieldsAreRefusedByName) {
  const struct {
    json fields;
    std::string param;
  } cases[] = {
      {{{"response_format", "json_object"}}, "response_format"},
      {{{"response_format", json::object()}}, "response_format"},
      {{{"response_format", {{"type", 3}}}}, "response_format"},
      {{{"response_format", {{"type", "yaml"}}}}, "response_format.type"},
      {{{"response_format", {{"type", "text"}, {"x", 1}}}}, "response_format.x"},
      {{{"response_format", {{"type", "json_object"}, {"schema", kSchema}}}}, "response_format.schema"},
      {{{"response_format", {{"type", "json_schema"}}}}, "response_format.json_schema"},
      {{{"response_format", {{"type", "json_schema"}, {"json_schema", "x"}}}}, "response_format.json_schema"},
      {{{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "n"}}}}}},
       "response_format.json_schema.schema"},
      {{{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", 3}}}}}},
       "response_format.json_schema.schema"},
      {{{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", 1}, {"schema", kSchema}}}}}},
       "response_format.json_schema.name"},
      {{{"response_format", {{"type", "json_schema"}, {"json_schema", {{"strict", "yes"}, {"schema", kSchema}}}}}},
       "response_format.json_schema.strict"},
      {{{"response_format", {{"type", "json_schema"}, {"json_schema", {{"format", 1}, {"schema", kSchema}}}}}},
       "response_format.json_schema.format"},
      {{{"response_format", {{"type", "structural_tag"}}}}, "response_format"},
      {{{"structured_outputs", "json"}}, "structured_outputs"},
      {{{"structured_outputs", {{"whitespace_pattern", " "}}}}, "structured_outputs.whitespace_pattern"},
      {{{"structured_outputs", {{"structural_tag", "{}"}}}}, "structured_outputs.structural_tag"},
      {{{"structured_outputs", {{"regex", 5}}}}, "structured_outputs.regex"},
      {{{"structured_outputs", {{"choice", json::array()}}}}, "structured_outputs.choice"},
      {{{"structured_outputs", {{"choice", {"a", 2}}}}}, "structured_outputs.choice"},
      {{{"structured_outputs", {{"grammar", {"a"}}}}}, "structured_outputs.grammar"},
      {{{"structured_outputs", {{"json", 1.5}}}}, "structured_outputs.json"},
      {{{"structured_outputs", {{"json_object", "yes"}}}}, "structured_outputs.json_object"},
      {{{"structured_outputs", {{"disable_fallback", 1}}}}, "structured_outputs.disable_fallback"},
      {{{"guided_json", 12}}, "guided_json"},
      {{{"guided_regex", {"a"}}}, "guided_regex"},
      {{{"guided_choice", "a"}}, "guided_choice"},
      {{{"guided_choice", json::array()}}, "guided_choice"},
      {{{"guided_grammar", false}}, "guided_grammar"},
      {{{"guided_decoding_backend", 3}}, "guided_decoding_backend"},
      {{{"guided_whitespace_pattern", "\\s*"}}, "guided_whitespace_pattern"},
  };
  for (const auto& c : cases) {
    const std::string message = expect_refused(c.fields, c.param);
    EXPECT_LE(message.size(), 300u) << message;
  }
}

TEST_F(StructuredOutputs, ConstraintsThatDoNotCompileAreRefusedBeforeQueueing) {
  const std::string huge(50000, 'z');  // under kMaxConstraintBytes: the compiler sees it
  const std::string too_big(200000, 'z');
  const struct {
    json fields;
    std::string param, says;
  } cases[] = {
      {{{"response_format",
         {{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", {{"$ref", "#/$defs/nothing"}}}}}}}},
       "response_format.json_schema.schema", "invalid JSON schema"},
      {{{"structured_outputs", {{"json", "{not json"}}}}, "structured_outputs.json", "invalid JSON schema"},
      {{{"guided_json", "{\"type\": \"" + huge + "\"}"}}, "guided_json", "invalid JSON schema"},
      {{{"structured_outputs", {{"regex", "(ab"}}}}, "structured_outputs.regex", "invalid regular expression"},
      {{{"guided_regex", "a{3,1}"}}, "guided_regex", "invalid regular expression"},
      {{{"structured_outputs", {{"grammar", "root ::= missing"}}}}, "structured_outputs.grammar",
       "invalid EBNF grammar"},
      {{{"guided_grammar", "root ::= " + huge}}, "guided_grammar", "invalid EBNF grammar"},
      {{{"guided_regex", too_big}}, "guided_regex", "at most 65536"},
  };
  for (const auto& c : cases) {
    const std::string message = expect_refused(c.fields, c.param);
    EXPECT_NE(message.find(c.says), std::string::npos) << message.substr(0, 300);
    EXPECT_NE(message.find("'" + c.param + "'"), std::string::npos) << message.substr(0, 300);
    EXPECT_LE(message.size(), 700u) << message.substr(0, 300);
  }
  // What compiled once is in the cache: the engine's compile of it later costs a lookup.
  const int64_t before = compiler_->cache_stats().misses;
  read({{"guided_regex", "[a-c]{2}"}});
  EXPECT_EQ(compiler_->cache_stats().misses, before + 1);
  read({{"structured_outputs", {{"regex", "[a-c]{2}"}}}});
  EXPECT_EQ(compiler_->cache_stats().misses, before + 1);
}

TEST_F(StructuredOutputs, AModelWithoutACompilerRefusesConstraints) {
  model_.grammar = nullptr;
  std::string message = expect_refused({{"response_format", {{"type", "json_object"}}}}, "response_format");
  EXPECT_NE(message.find("not available"), std::string::npos) << message;
  // Plain text stays fine.
  EXPECT_FALSE(read({{"response_format", {{"type", "text"}}}}).has_value());

  model_.tokenizer = nullptr;
  model_.chat_template = nullptr;
  ApiError e = expect_api_error([&] { completion({{"prompt", {1, 2}}, {"guided_regex", "a"}}); }, 400, "guided_regex",
                                "no tokenizer");
  EXPECT_NE(std::string(e.what()).find("tokenizer"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace fg::server
