// bench/serve/completion_chunk.cpp — JSON of one streamed completion chunk.
#include "bench/serve/completion_chunk.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace fg::bench {

namespace {

std::optional<int64_t> token_count(const nlohmann::json& usage, const char* key) {
  const auto it = usage.find(key);
  if (it == usage.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

std::string error_text(const nlohmann::json& error) {
  if (error.is_object()) {
    const auto message = error.find("message");
    if (message != error.end() && message->is_string()) return message->get<std::string>();
  }
  if (error.is_string()) return error.get<std::string>();
  return error.dump();
}

}  // namespace

CompletionChunk parse_completion_chunk(std::string_view payload) {
  CompletionChunk chunk;
  if (payload == "[DONE]") {
    chunk.done = true;
    return chunk;
  }
  const nlohmann::json j = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    chunk.error = fmt::format("stream chunk is not a JSON object: {:.200}", payload);
    return chunk;
  }
  if (const auto error = j.find("error"); error != j.end() && !error->is_null()) {
    chunk.error = "server error in stream: " + error_text(*error);
    return chunk;
  }
  if (const auto usage = j.find("usage"); usage != j.end() && usage->is_object()) {
    chunk.prompt_tokens = token_count(*usage, "prompt_tokens");
    chunk.completion_tokens = token_count(*usage, "completion_tokens");
  }
  const auto choices = j.find("choices");
  if (choices != j.end() && choices->is_array() && !choices->empty()) {
    const nlohmann::json& choice = choices->front();
    if (const auto text = choice.find("text"); text != choice.end() && text->is_string())
      chunk.text = text->get<std::string>();
    const auto finish = choice.find("finish_reason");
    const bool finished = finish != choice.end() && !finish->is_null();
    chunk.bare_finish = chunk.text.empty() && finished;
    chunk.content = !chunk.bare_finish;
  }
  return chunk;
}

}  // namespace fg::bench
