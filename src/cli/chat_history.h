// cli/chat_history.h — what `fullgraph chat` keeps between turns and how it reads a typed line:
// the conversation as the messages array the chat template renders (the system message, when
// given, then the user's and the assistant's turns in order), and the line as a message or one
// of the session's commands.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace fg::cli {

class ChatHistory {
 public:
  explicit ChatHistory(std::string system = {});

  void add_user(const std::string& text);
  void add_assistant(const std::string& text);
  // Takes out the last message when it is the user's, unanswered: a turn that failed must not
  // leave it for the next turn to answer too.
  void drop_unanswered();
  // Back to the system message alone.
  void reset();

  const nlohmann::json& messages() const { return messages_; }
  // User and assistant messages (the system message is not counted).
  size_t turns() const { return messages_.size() - (system_.empty() ? 0 : 1); }
  bool has_system() const { return !system_.empty(); }

 private:
  std::string system_;
  nlohmann::json messages_ = nlohmann::json::array();  // [{"role", "content"}, ...]
};

enum class ChatLine { kEmpty, kMessage, kReset, kExit, kHelp, kUnknownCommand };

// What a typed line is: blank (ignored), a message, or a command (/reset, /exit, /help; any other
// word after a leading '/' is an unknown command). Surrounding white space does not count.
ChatLine classify_chat_line(std::string_view line);

// The line without the white space around it (the message as it goes into the history).
std::string trim_chat_line(std::string_view line);

}  // namespace fg::cli
