// tests/test_engine_structured.cpp — structured outputs through the engine and the full-graph runner
// on the CPU backend (the e2e Llama model with its SentencePiece tokenizer, random weights):
// constrained requests sampled at temperature 1 end inside their grammar; a grammar that is
// complete ends its request even under ignore_eos; unconstrained requests stepped beside
// constrained ones generate exactly what they generate alone (the masks stay in their rows); a
// constraint that does not compile, or an engine without a grammar compiler, is refused at submit.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "backend/cpu/cpu_backend.h"
#include "engine_model_check.h"
#include "grammar_test_support.h"

namespace fg {
namespace {

constexpr int64_t kBudget = 64, kSeqs = 8;

struct Outcome {
  std::vector<int32_t> ids;
  std::string text;
  FinishReason reason = FinishReason::kNone;
};

StructuredOutput constraint(StructuredOutputKind kind, std::string text, std::string source = "test",
                            bool any_whitespace = true) {
  StructuredOutput c;
  c.kind = kind;
  c.text = std::move(text);
  c.source = std::move(source);
  c.any_whitespace = any_whitespace;
  return c;
}

RequestSpec spec_of(std::vector<int32_t> prompt, int64_t max_tokens, int64_t seed, Outcome* out) {
  RequestSpec s;
  s.prompt = std::move(prompt);
  s.sampling.temperature = 1.0f;
  s.sampling.seed = seed;
  s.has_seed = true;
  s.stop.max_tokens = max_tokens;
  s.on_output = [out](const RequestOutput& o) {
    out->ids.insert(out->ids.end(), o.token_ids.begin(), o.token_ids.end());
    out->text += o.text;
    if (o.finished) out->reason = o.finish_reason;
  };
  return s;
}

class EngineStructured : public ::testing::Test {
 protected:
  EngineStructured()
      : fixture_(backend_, {}, test::testdata_dir() + "/e2e/tiny-llama2tok", 128, kBudget, kSeqs),
        tokenizer_(test::tokenizer_fixture("llama2")),
        compiler_(test::compiler_fixture("llama2")) {}

  EngineOptions options(bool with_grammar) {
    EngineOptions o = test::engine_test_options(fixture_.config, kBudget, kSeqs);
    o.eos_token_ids = test::fixture_eos_ids("llama2");
    if (with_grammar) o.grammar = &compiler_;
    return o;
  }
  std::vector<int32_t> prompt(const std::string& text) const { return tokenizer_.encode(text, true); }

  CpuBackend backend_;
  test::EngineModelFixture fixture_;
  const Tokenizer& tokenizer_;
  GrammarCompiler& compiler_;
};

TEST_F(EngineStructured, ConstrainedRequestsEndInsideTheirGrammar) {
  KvBlockManager blocks({128, 16, true});
  Engine engine(*fixture_.runner, blocks, &tokenizer_, options(true));
  const std::vector<std::string> choices = {"red", "green", "blue"};
  const std::string pattern = "[a-z]{2,4}-[0-9]{2}";
  const std::string schema =
      R"({"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":99},"ok":{"type":"boolean"}},)"
      R"("required":["n","ok"],"additionalProperties":false})";
  std::vector<Outcome> out(12);
  for (int i = 0; i < 12; ++i) {
    RequestSpec s = spec_of(prompt("Answer:"), 64, 100 + i, &out[i]);
    if (i % 3 == 0) s.structured_output = constraint(StructuredOutputKind::kChoice, R"(["red","green","blue"])");
    if (i % 3 == 1) s.structured_output = constraint(StructuredOutputKind::kRegex, pattern);
    if (i % 3 == 2) s.structured_output = constraint(StructuredOutputKind::kJsonSchema, schema, "test", false);
    engine.submit(std::move(s));
  }
  while (engine.step()) blocks.check_invariants();
  EXPECT_EQ(blocks.num_free_blocks(), blocks.num_usable_blocks());
  for (int i = 0; i < 12; ++i) {
    SCOPED_TRACE(testing::Message() << "request " << i << ": " << out[i].text);
    EXPECT_EQ(out[i].reason, FinishReason::kStop);
    if (i % 3 == 0) {
      EXPECT_NE(std::find(choices.begin(), choices.end(), out[i].text), choices.end());
    } else if (i % 3 == 1) {
      EXPECT_TRUE(std::regex_match(out[i].text, std::regex(pattern)));
    } else {
      const nlohmann::json doc = nlohmann::json::parse(out[i].text);
      EXPECT_TRUE(doc.at("n").is_number_integer() && doc.at("n").get<int>() >= 0 && doc.at("n").get<int>() <= 99);
      EXPECT_TRUE(doc.at("ok").is_boolean());
      EXPECT_EQ(doc.size(), 2u);
    }
  }
}

TEST_F(EngineStructured, ACompleteGrammarEndsTheRequestUnderIgnoreEos) {
  KvBlockManager blocks({128, 16, true});
  Engine engine(*fixture_.runner, blocks, &tokenizer_, options(true));
  Outcome out;
  RequestSpec s = spec_of(prompt("Pick:"), 40, 7, &out);
  s.stop.ignore_eos = true;
  s.structured_output = constraint(StructuredOutputKind::kChoice, R"(["yes","no"])");
  engine.submit(std::move(s));
  while (engine.step()) {
  }
  EXPECT_EQ(out.reason, FinishReason::kStop);
  EXPECT_TRUE(out.text == "yes" || out.text == "no") << out.text;
  EXPECT_LT(static_cast<int64_t>(out.ids.size()), 40);
}

TEST_F(EngineStructured, UnconstrainedRequestsBesideConstrainedOnesAreUnchanged) {
  const auto run = [&](bool with_constrained) {
    KvBlockManager blocks({128, 16, true});
    Engine engine(*fixture_.runner, blocks, &tokenizer_, options(true));
    std::vector<Outcome> out(8);
    for (int i = 0; i < 8; ++i) {
      if (i % 2 == 0 && !with_constrained) continue;
      RequestSpec s = spec_of(prompt(i % 2 ? "Once upon a time" : "Data:"), 12 + i, 300 + i, &out[i]);
      s.stop.ignore_eos = i % 2 == 1;  // the free ones run their full length
      if (i % 2 == 0) s.structured_output = constraint(StructuredOutputKind::kRegex, "[0-9]{1,3}");
      engine.submit(std::move(s));
    }
    while (engine.step()) {
    }
    return out;
  };
  const std::vector<Outcome> mixed = run(true), alone = run(false);
  for (int i = 1; i < 8; i += 2) {
    EXPECT_EQ(mixed[i].ids, alone[i].ids) << "unconstrained request " << i;
    EXPECT_EQ(mixed[i].ids.size(), static_cast<size_t>(12 + i));
  }
  for (int i = 0; i < 8; i += 2) EXPECT_TRUE(std::regex_match(mixed[i].text, std::regex("[0-9]{1,3}"))) << mixed[i].text;
}

TEST_F(EngineStructured, ConstraintsAreRefusedAtSubmitWhenTheyCannotRun) {
  KvBlockManager blocks({128, 16, true});
  Outcome out;
  {
    Engine engine(*fixture_.runner, blocks, &tokenizer_, options(true));
    RequestSpec s = spec_of(prompt("x"), 8, 1, &out);
    s.structured_output = constraint(StructuredOutputKind::kRegex, "[a-", "guided_regex");
    const std::string message = test::error_of([&] { engine.submit(std::move(s)); });
    EXPECT_NE(message.find("guided_regex"), std::string::npos) << message;
  }
  Engine plain(*fixture_.runner, blocks, &tokenizer_, options(false));
  RequestSpec s = spec_of(prompt("x"), 8, 1, &out);
  s.structured_output = constraint(StructuredOutputKind::kJsonObject, "", "response_format");
  const std::string message = test::error_of([&] { plain.submit(std::move(s)); });
  EXPECT_NE(message.find("response_format"), std::string::npos) << message;
}

}  // namespace
}  // namespace fg
