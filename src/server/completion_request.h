// server/completion_request.h — the completions-specific part of a request (/v1/completions):
// the prompt (text or token ids, with or without the tokenizer's special tokens), logprobs as a
// count, echo, and the refusal of what fullgraph does not implement (suffix: no fill-in-the-middle
// template; best_of other than n).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/model_context.h"
#include "server/openai_response.h"

namespace fg::server {

struct ParsedRequest;

struct CompletionPrompt {
  std::vector<int32_t> tokens;
  std::optional<std::string> text;  // the prompt as sent, when it was text
};

// body["prompt"]: a string, a list of token ids, or a list holding one of those (OpenAI's batched
// form with one prompt). "add_special_tokens" (default true) adds the tokenizer's BOS to text.
CompletionPrompt completion_prompt(const nlohmann::json& body, const ModelContext& model);

// Completions' logprobs: a count of top logprobs (0 = the sampled token's only); -1 when absent.
int32_t read_completion_logprobs(const nlohmann::json& body);

// "echo" (default false).
bool read_echo(const nlohmann::json& body);

// suffix (refused unless empty: no fill-in-the-middle template) and best_of (must equal n).
void refuse_unsupported_completion_fields(const nlohmann::json& body, int64_t n);

// Echo, in a non-streamed response: the prompt's text before every choice's text, as vLLM
// answers (each choice repeats its prompt). Nothing without request.echo.
void prepend_echo(std::vector<ChoiceOutput>& choices, const ParsedRequest& request);

}  // namespace fg::server
