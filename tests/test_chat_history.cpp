// tests/test_chat_history.cpp — what `fullgraph chat` keeps between turns (cli/chat_history.h):
// the conversation grows by user and assistant messages, a failed turn's message goes, /reset
// keeps the system message alone; and the next turn's prompt, read as the server reads a chat
// request, holds the earlier turns.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/chat_history.h"
#include "server_test_support.h"

namespace fg {
namespace {

using cli::ChatHistory;
using cli::ChatLine;
using nlohmann::json;

TEST(ChatHistory, KeepsTheTurnsInOrder) {
  ChatHistory h("Be terse.");
  EXPECT_EQ(h.messages(), json::parse(R"([{"role": "system", "content": "Be terse."}])"));
  h.add_user("Hi");
  h.add_assistant("Hello.");
  h.add_user("Name a color.");
  EXPECT_EQ(h.turns(), 3u);
  EXPECT_EQ(h.messages(), json::parse(R"([{"role": "system", "content": "Be terse."},
                                          {"role": "user", "content": "Hi"},
                                          {"role": "assistant", "content": "Hello."},
                                          {"role": "user", "content": "Name a color."}])"));
}

TEST(ChatHistory, AFailedTurnTakesItsMessageBack) {
  ChatHistory h;
  h.add_user("Hi");
  h.add_assistant("Hello.");
  h.add_user("a message past the context");
  h.drop_unanswered();
  EXPECT_EQ(h.messages(), json::parse(R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}])"));
  h.drop_unanswered();  // an answered turn stays
  EXPECT_EQ(h.turns(), 2u);
}

TEST(ChatHistory, ResetKeepsTheSystemMessage) {
  ChatHistory with_system("Be terse.");
  with_system.add_user("Hi");
  with_system.add_assistant("Hello.");
  with_system.reset();
  EXPECT_EQ(with_system.messages(), json::parse(R"([{"role": "system", "content": "Be terse."}])"));
  EXPECT_EQ(with_system.turns(), 0u);
  EXPECT_TRUE(with_system.has_system());

  ChatHistory without;
  without.add_user("Hi");
  without.reset();
  EXPECT_EQ(without.messages(), json::array());
  EXPECT_FALSE(without.has_system());
}

TEST(ChatHistory, LinesAreMessagesOrCommands) {
  EXPECT_EQ(cli::classify_chat_line(""), ChatLine::kEmpty);
  EXPECT_EQ(cli::classify_chat_line("  \t\r"), ChatLine::kEmpty);
  EXPECT_EQ(cli::classify_chat_line("What is 2 + 2?"), ChatLine::kMessage);
  EXPECT_EQ(cli::classify_chat_line("/reset"), ChatLine::kReset);
  EXPECT_EQ(cli::classify_chat_line("  /exit \r"), ChatLine::kExit);
  EXPECT_EQ(cli::classify_chat_line("/help"), ChatLine::kHelp);
  EXPECT_EQ(cli::classify_chat_line("/quit"), ChatLine::kUnknownCommand);
  EXPECT_EQ(cli::classify_chat_line("/reset now"), ChatLine::kUnknownCommand);
  EXPECT_EQ(cli::trim_chat_line("  Hi there \r"), "Hi there");
}

// The second turn's prompt is the first turn's prompt, its answer and the new message: the model
// sees the conversation, not the last line alone; after a reset it sees the last line alone.
class ChatHistoryPrompt : public server::testing::ModelFixture {
 protected:
  std::vector<int32_t> prompt(const ChatHistory& h) { return chat({{"messages", h.messages()}}).prompt; }
};

TEST_F(ChatHistoryPrompt, TheNextTurnSeesTheEarlierOnes) {
  ChatHistory h("Be terse.");
  h.add_user("Hi");
  const std::vector<int32_t> first = prompt(h);
  h.add_assistant("Hello.");
  h.add_user("Hi");
  const std::vector<int32_t> second = prompt(h);
  ASSERT_GT(second.size(), first.size());
  const std::string text = tokenizer_.decode(second, /*skip_special_tokens=*/false);
  EXPECT_NE(text.find("Be terse."), std::string::npos) << text;
  EXPECT_NE(text.find("Hello."), std::string::npos) << text;
  size_t his = 0;
  for (size_t at = text.find("Hi"); at != std::string::npos; at = text.find("Hi", at + 1)) ++his;
  EXPECT_EQ(his, 2u) << text;  // both user messages

  h.reset();
  h.add_user("Hi");
  EXPECT_EQ(prompt(h), first);
}

}  // namespace
}  // namespace fg
