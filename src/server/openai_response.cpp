// server/openai_response.cpp — see openai_response.h.
#include "server/openai_response.h"

#include <fmt/format.h>

#include <random>
#include <utility>

namespace fg::server {

std::string new_response_id(const char* prefix) {
  // Unguessable enough to tell responses apart; nothing depends on it being secret.
  thread_local std::mt19937_64 rng([] {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }());
  return fmt::format("{}{:016x}{:016x}", prefix, rng(), rng());
}

ojson usage_json(const Usage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
}

ojson stop_reason_json(const std::optional<std::variant<int32_t, std::string>>& stop_reason) {
  if (!stop_reason) return nullptr;
  if (std::holds_alternative<int32_t>(*stop_reason)) return std::get<int32_t>(*stop_reason);
  return std::get<std::string>(*stop_reason);
}

ojson finish_reason_json(FinishReason reason) {
  const char* name = finish_reason_name(reason);
  return name == nullptr ? ojson(nullptr) : ojson(name);
}

ojson completion_response(const ResponseHeader& header, const std::vector<ChoiceOutput>& choices, bool with_logprobs,
                          const Usage& usage, const LogprobFormatter& format, const PromptReport& prompt) {
  ojson list = ojson::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceOutput& c = choices[i];
    LogprobFormatter::Cursor cursor = format.start();
    ojson logprobs = nullptr;
    if (with_logprobs) {
      if (prompt.echo_logprobs) {
        logprobs = format.echoed_prompt(prompt.tokens, c.prompt_logprobs, cursor);
        LogprobFormatter::append_completion(logprobs, format.completion(c.logprobs, cursor));
      } else {
        logprobs = format.completion(c.logprobs, cursor);
      }
    }
    ojson choice = {{"index", i},
                    {"text", c.text},
                    {"logprobs", std::move(logprobs)},
                    {"finish_reason", finish_reason_json(c.finish_reason)},
                    {"stop_reason", stop_reason_json(c.stop_reason)}};
    if (prompt.prompt_logprobs) choice["prompt_logprobs"] = format.prompt_logprobs(prompt.tokens, c.prompt_logprobs);
    list.push_back(std::move(choice));
  }
  return {{"id", header.id}, {"object", "text_completion"}, {"created", header.created}, {"model", header.model},
          {"choices", list}, {"usage", usage_json(usage)}};
}

ojson chat_response(const ResponseHeader& header, const std::vector<ChoiceOutput>& choices, bool with_logprobs,
                    const Usage& usage, const LogprobFormatter& format, const PromptReport& prompt,
                    const ChatOutputOptions& output) {
  ojson list = ojson::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceOutput& c = choices[i];
    ojson logprobs = nullptr;
    LogprobFormatter::Cursor cursor = format.start();
    if (with_logprobs) logprobs = {{"content", format.chat_content(c.logprobs, cursor)}};
    bool tool_calls = false;
    ojson message = chat_message(c.text, output, tool_calls);
    list.push_back({{"index", i},
                    {"message", std::move(message)},
                    {"logprobs", logprobs},
                    {"finish_reason", tool_calls ? ojson("tool_calls") : finish_reason_json(c.finish_reason)},
                    {"stop_reason", stop_reason_json(c.stop_reason)}});
  }
  ojson response = {{"id", header.id},       {"object", "chat.completion"}, {"created", header.created},
                    {"model", header.model}, {"choices", list},             {"usage", usage_json(usage)}};
  if (prompt.prompt_logprobs)  // the prompt is every choice's: reported once
    response["prompt_logprobs"] =
        format.prompt_logprobs(prompt.tokens, choices.empty() ? std::span<const TokenLogprobs>{}
                                                              : std::span<const TokenLogprobs>(choices[0].prompt_logprobs));
  return response;
}

ojson completion_chunk(const ResponseHeader& header, int64_t index, const std::string& text, ojson logprobs,
                       FinishReason finish, const std::optional<std::variant<int32_t, std::string>>& stop_reason,
                       bool usage_null) {
  ojson choice = {{"index", index},
                  {"text", text},
                  {"logprobs", std::move(logprobs)},
                  {"finish_reason", finish_reason_json(finish)},
                  {"stop_reason", stop_reason_json(stop_reason)}};
  ojson chunk = {{"id", header.id},
                 {"object", "text_completion"},
                 {"created", header.created},
                 {"model", header.model},
                 {"choices", ojson::array({std::move(choice)})}};
  if (usage_null) chunk["usage"] = nullptr;
  return chunk;
}

ojson chat_chunk(const ResponseHeader& header, int64_t index, ojson delta, ojson logprobs, FinishReason finish,
                 const std::optional<std::variant<int32_t, std::string>>& stop_reason, bool usage_null) {
  ojson choice = {{"index", index},
                  {"delta", std::move(delta)},
                  {"logprobs", std::move(logprobs)},
                  {"finish_reason", finish_reason_json(finish)},
                  {"stop_reason", stop_reason_json(stop_reason)}};
  ojson chunk = {{"id", header.id},
                 {"object", "chat.completion.chunk"},
                 {"created", header.created},
                 {"model", header.model},
                 {"choices", ojson::array({std::move(choice)})}};
  if (usage_null) chunk["usage"] = nullptr;
  return chunk;
}

ojson usage_chunk(const ResponseHeader& header, const char* object, const Usage& usage) {
  return {{"id", header.id},       {"object", object},          {"created", header.created},
          {"model", header.model}, {"choices", ojson::array()}, {"usage", usage_json(usage)}};
}

}  // namespace fg::server
