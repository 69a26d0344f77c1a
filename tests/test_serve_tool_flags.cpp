// tests/test_serve_tool_flags.cpp — `serve`'s tool-calling and reasoning flags as vLLM spells them:
// --enable-auto-tool-choice, --tool-call-parser, --reasoning-parser, parsed and checked by
// cli/serve_flags (the server reads the parsers they name from ServeFlags).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <string>

#include "cli/serve_flags.h"
#include "core/error.h"

namespace fg::cli {
namespace {

using ::testing::HasSubstr;

// Parses `args` as serve's flags and applies them; the error message, or "" when they pass.
std::string apply(const std::string& args, ServeFlags& flags) {
  CLI::App app;
  add_serve_flags(app, flags);
  app.parse(args, false);
  EngineSetupOptions engine;
  try {
    apply_serve_flags(flags, engine);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ServeToolFlags, NoneGivenMeansNoParsers) {
  ServeFlags flags;
  EXPECT_EQ(apply("", flags), "");
  EXPECT_FALSE(flags.enable_auto_tool_choice);
  EXPECT_FALSE(flags.tool_call_parser);
  EXPECT_FALSE(flags.reasoning_parser);
}

TEST(ServeToolFlags, TakesVllmsNames) {
  ServeFlags flags;
  EXPECT_EQ(apply("--enable-auto-tool-choice --tool-call-parser hermes --reasoning-parser qwen3", flags), "");
  EXPECT_TRUE(flags.enable_auto_tool_choice);
  EXPECT_EQ(flags.tool_call_parser, server::ToolCallFormat::kHermes);
  EXPECT_EQ(flags.reasoning_parser, server::ReasoningParserKind::kQwen3);
  ServeFlags llama;
  EXPECT_EQ(apply("--tool-call-parser llama3_json --reasoning-parser deepseek_r1", llama), "");
  EXPECT_FALSE(llama.enable_auto_tool_choice);  // a parser alone is allowed, as in vLLM
  EXPECT_EQ(llama.tool_call_parser, server::ToolCallFormat::kLlama3Json);
  EXPECT_EQ(llama.reasoning_parser, server::ReasoningParserKind::kDeepSeekR1);
}

TEST(ServeToolFlags, RefusesUnknownParsersListingTheKnownOnes) {
  ServeFlags tools;
  const std::string tool_error = apply("--tool-call-parser mistral", tools);
  EXPECT_THAT(tool_error, HasSubstr("--tool-call-parser 'mistral'"));
  EXPECT_THAT(tool_error, HasSubstr("hermes, llama3_json"));
  ServeFlags reasoning;
  const std::string reasoning_error = apply("--reasoning-parser granite", reasoning);
  EXPECT_THAT(reasoning_error, HasSubstr("--reasoning-parser 'granite'"));
  EXPECT_THAT(reasoning_error, HasSubstr("deepseek_r1, qwen3"));
}

TEST(ServeToolFlags, AutoToolChoiceNeedsAParser) {
  ServeFlags flags;
  EXPECT_THAT(apply("--enable-auto-tool-choice", flags),
              HasSubstr("--enable-auto-tool-choice needs --tool-call-parser (one of: hermes, llama3_json)"));
}

}  // namespace
}  // namespace fg::cli
