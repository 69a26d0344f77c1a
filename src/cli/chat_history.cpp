// cli/chat_history.cpp — see chat_history.h.
#include "cli/chat_history.h"

#include <utility>

namespace fg::cli {

ChatHistory::ChatHistory(std::string system) : system_(std::move(system)) { reset(); }

void ChatHistory::add_user(const std::string& text) { messages_.push_back({{"role", "user"}, {"content", text}}); }

void ChatHistory::add_assistant(const std::string& text) {
  messages_.push_back({{"role", "assistant"}, {"content", text}});
}

void ChatHistory::drop_unanswered() {
  if (!messages_.empty() && messages_.back()["role"] == "user") messages_.erase(messages_.size() - 1);
}

void ChatHistory::reset() {
  messages_ = nlohmann::json::array();
  if (!system_.empty()) messages_.push_back({{"role", "system"}, {"content", system_}});
}

std::string trim_chat_line(std::string_view line) {
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  const size_t first = line.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return std::string(line.substr(first, line.find_last_not_of(kSpace) - first + 1));
}

ChatLine classify_chat_line(std::string_view line) {
  const std::string text = trim_chat_line(line);
  if (text.empty()) return ChatLine::kEmpty;
  if (text.front() != '/') return ChatLine::kMessage;
  if (text == "/reset") return ChatLine::kReset;
  if (text == "/exit") return ChatLine::kExit;
  if (text == "/help") return ChatLine::kHelp;
  return ChatLine::kUnknownCommand;
}

}  // namespace fg::cli
