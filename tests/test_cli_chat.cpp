// tests/test_cli_chat.cpp — `fullgraph chat` at a terminal (pty_session.h), as a person uses it:
// the answer streams back up to the next prompt, the conversation is kept between turns, /reset
// clears it, a turn that fails leaves the session running, and /exit or Ctrl-D ends it with exit
// code 0. On the built-in tiny model (random weights: its answers mean nothing, and do not show
// what a turn saw), and on the trained default model when scripts/setup.sh has fetched it, which
// knows the capital of France, and of Germany when the conversation says what "And" asks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>

#include "gguf_test_support.h"
#include "pty_session.h"

namespace fg {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using test::PtySession;

// The prompt the session prints when it waits for a line (after a line of its own).
constexpr const char* kPrompt = "\n> ";
constexpr auto kStart = 180s;  // loading the model and capturing its graphs
constexpr auto kTurn = 120s;

// Sends `line` and returns what the session printed before its next prompt; fails the test on a
// hang.
std::string raw_turn(PtySession& chat, const std::string& line) {
  chat.send_line(line);
  const std::optional<std::string> out = chat.read_until(kPrompt, kTurn);
  EXPECT_TRUE(out.has_value()) << "no prompt after '" << line << "'; the session printed: " << chat.output();
  return out ? out->substr(0, out->size() - 3) : "";
}

// The answer to `line`: what the turn printed without the log's lines ("fullgraph: ...").
std::string turn(PtySession& chat, const std::string& line) {
  std::istringstream lines(raw_turn(chat, line));
  std::string text, out;
  while (std::getline(lines, text))
    if (text.rfind("fullgraph: ", 0) != 0) out += (out.empty() ? "" : "\n") + text;
  return out;
}

TEST(CliChat, BuiltInModelKeepsTheConversationResetsAndExits) {
  // A small context, so that one long message is past it.
  PtySession chat(FULLGRAPH_BINARY, {"chat", "--max-tokens", "8", "--max-model-len", "256", "--no-progress"},
                  {{"FULLGRAPH_DEFAULT_MODEL", "builtin"}});
  ASSERT_TRUE(chat.started());
  const std::optional<std::string> banner = chat.read_until(kPrompt, kStart);
  ASSERT_TRUE(banner.has_value()) << chat.output();
  EXPECT_THAT(*banner, HasSubstr("no --model: using the built-in tiny model"));
  EXPECT_THAT(*banner, HasSubstr("/reset clears the conversation"));

  const std::string first = turn(chat, "Hello");
  EXPECT_FALSE(first.empty());
  const std::string second = turn(chat, "Hello");
  EXPECT_FALSE(second.empty());
  EXPECT_THAT(raw_turn(chat, "/reset"), HasSubstr("conversation cleared"));
  // A fresh conversation: the first turn's prompt again, so its answer again.
  EXPECT_EQ(turn(chat, "Hello"), first);

  // A message past the context: the turn fails, says why, and takes the message back out.
  std::string long_message;
  for (int i = 0; i < 400; ++i) long_message += "word ";
  EXPECT_THAT(raw_turn(chat, long_message), HasSubstr("maximum context length is 256 tokens"));
  EXPECT_EQ(turn(chat, "Hello"), second);  // the same conversation as the second turn's

  EXPECT_THAT(raw_turn(chat, "/quit"), HasSubstr("unknown command /quit"));
  // An empty line is no turn: the prompt comes again, and nothing else.
  chat.send_line("   ");
  const std::string help = raw_turn(chat, "/help");
  EXPECT_EQ(help.substr(0, 3), "> /") << help;
  EXPECT_THAT(help, HasSubstr("/exit"));
  chat.send_line("/exit");
  EXPECT_EQ(chat.wait_exit(30s), 0) << chat.output();
}

TEST(CliChat, EndOfInputEndsTheSession) {
  PtySession chat(FULLGRAPH_BINARY, {"chat", "--no-progress"}, {{"FULLGRAPH_DEFAULT_MODEL", "builtin"}});
  ASSERT_TRUE(chat.started());
  ASSERT_TRUE(chat.read_until(kPrompt, kStart).has_value()) << chat.output();
  chat.send_eof();
  EXPECT_EQ(chat.wait_exit(30s), 0) << chat.output();
}

TEST(CliChat, TheTrainedDefaultModelAnswers) {
  const std::filesystem::path model = test::source_dir() / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(model))
    GTEST_SKIP() << model.string() << " is not there; scripts/setup.sh fetches it";
  PtySession chat(FULLGRAPH_BINARY, {"chat", "--model", model.string(), "--max-tokens", "64", "--no-progress"});
  ASSERT_TRUE(chat.started());
  ASSERT_TRUE(chat.read_until(kPrompt, kStart).has_value()) << chat.output();
  const std::string paris = turn(chat, "What is the capital of France?");
  EXPECT_THAT(paris, HasSubstr("Paris"));
  EXPECT_THAT(paris, ::testing::Not(HasSubstr("<|im_end|>")));  // the EOS ends the answer; it is not text
  // "And of Germany?" means something only after the first question.
  const std::string with_history = turn(chat, "And of Germany?");
  EXPECT_THAT(with_history, HasSubstr("Berlin"));
  EXPECT_THAT(raw_turn(chat, "/reset"), HasSubstr("conversation cleared"));
  const std::string fresh = turn(chat, "And of Germany?");
  EXPECT_FALSE(fresh.empty());
  EXPECT_NE(fresh, with_history);
  chat.send_eof();
  EXPECT_EQ(chat.wait_exit(30s), 0) << chat.output();
}

}  // namespace
}  // namespace fg
