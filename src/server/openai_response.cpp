// server/openai_response.cpp — see openai_response.h.
#include "server/openai_response.h"

#include <fmt/format.h>

#include <cmath>
#include <random>
#include <utility>

namespace fg::server {

namespace {

int64_t code_points(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

ojson bytes_of(const std::string& s) {
  ojson out = ojson::array();
  for (unsigned char c : s) out.push_back(static_cast<int>(c));
  return out;
}

}  // namespace

std::string new_response_id(const char* prefix) {
  // Unguessable enough to tell responses apart; nothing depends on it being secret.
  thread_local std::mt19937_64 rng([] {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }());
  return fmt::format("{}{:016x}{:016x}", prefix, rng(), rng());
}

double json_logprob(float logprob) {
  if (std::isnan(logprob) || logprob < -9999.0f) return -9999.0;
  return static_cast<double>(logprob);
}

std::string LogprobFormatter::token_text(int32_t previous, int32_t id) const {
  if (tokenizer_ == nullptr) return fmt::format("token_id:{}", id);
  const int32_t pair[2] = {previous, id};
  const std::string both = tokenizer_->decode(std::span<const int32_t>(pair, 2), /*skip_special_tokens=*/false);
  const std::string before = tokenizer_->decode(std::span<const int32_t>(pair, 1), /*skip_special_tokens=*/false);
  if (both.size() >= before.size() && both.compare(0, before.size(), before) == 0) return both.substr(before.size());
  return tokenizer_->decode(std::span<const int32_t>(&id, 1), /*skip_special_tokens=*/false);
}

ojson LogprobFormatter::completion(std::span<const int32_t> ids, std::span<const TokenLogprobs> logprobs,
                                   int32_t& previous, int64_t& offset) const {
  ojson tokens = ojson::array(), values = ojson::array(), top = ojson::array(), offsets = ojson::array();
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t context = std::exchange(previous, ids[i]);
    const std::string text = token_text(context, ids[i]);
    tokens.push_back(text);
    offsets.push_back(offset);
    offset += code_points(text);
    if (i >= logprobs.size()) {
      values.push_back(nullptr);
      top.push_back(nullptr);
      continue;
    }
    values.push_back(json_logprob(logprobs[i].logprob));
    // A dict keyed by text: two ids that decode alike keep the likelier one.
    ojson alternatives = ojson::object();
    for (const auto& [id, value] : logprobs[i].top) {
      const std::string alt = token_text(context, id);
      if (!alternatives.contains(alt)) alternatives[alt] = json_logprob(value);
    }
    top.push_back(std::move(alternatives));
  }
  return {{"tokens", tokens}, {"token_logprobs", values}, {"top_logprobs", top}, {"text_offset", offsets}};
}

ojson LogprobFormatter::chat_content(std::span<const int32_t> ids, std::span<const TokenLogprobs> logprobs,
                                     int32_t& previous) const {
  ojson content = ojson::array();
  for (size_t i = 0; i < ids.size() && i < logprobs.size(); ++i) {
    const int32_t context = std::exchange(previous, ids[i]);
    const std::string text = token_text(context, ids[i]);
    ojson top = ojson::array();
    for (const auto& [id, value] : logprobs[i].top) {
      const std::string alt = token_text(context, id);
      top.push_back({{"token", alt}, {"logprob", json_logprob(value)}, {"bytes", bytes_of(alt)}});
    }
    content.push_back({{"token", text},
                       {"logprob", json_logprob(logprobs[i].logprob)},
                       {"bytes", bytes_of(text)},
                       {"top_logprobs", top}});
  }
  return content;
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
                          const Usage& usage, const LogprobFormatter& format, int32_t last_prompt_token) {
  ojson list = ojson::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceOutput& c = choices[i];
    int64_t offset = 0;
    int32_t previous = last_prompt_token;
    list.push_back(
        {{"index", i},
         {"text", c.text},
         {"logprobs", with_logprobs ? format.completion(c.token_ids, c.logprobs, previous, offset) : ojson(nullptr)},
         {"finish_reason", finish_reason_json(c.finish_reason)},
         {"stop_reason", stop_reason_json(c.stop_reason)}});
  }
  return {{"id", header.id}, {"object", "text_completion"}, {"created", header.created}, {"model", header.model},
          {"choices", list}, {"usage", usage_json(usage)}};
}

ojson chat_response(const ResponseHeader& header, const std::vector<ChoiceOutput>& choices, bool with_logprobs,
                    const Usage& usage, const LogprobFormatter& format, int32_t last_prompt_token) {
  ojson list = ojson::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceOutput& c = choices[i];
    ojson logprobs = nullptr;
    int32_t previous = last_prompt_token;
    if (with_logprobs) logprobs = {{"content", format.chat_content(c.token_ids, c.logprobs, previous)}};
    list.push_back({{"index", i},
                    {"message", {{"role", "assistant"}, {"content", c.text}}},
                    {"logprobs", logprobs},
                    {"finish_reason", finish_reason_json(c.finish_reason)},
                    {"stop_reason", stop_reason_json(c.stop_reason)}});
  }
  return {{"id", header.id}, {"object", "chat.completion"}, {"created", header.created}, {"model", header.model},
          {"choices", list}, {"usage", usage_json(usage)}};
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
