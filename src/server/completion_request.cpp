// server/completion_request.cpp — see completion_request.h.
#include "server/completion_request.h"

#include <fmt/format.h>

#include "sampling/sampling_params.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/request_reading.h"

namespace fg::server {

namespace {

using nlohmann::json;

CompletionPrompt text_prompt(const std::string& text, const ModelContext& model, bool add_special_tokens) {
  if (text.empty()) bad_request("prompt", "'prompt' must not be empty");
  if (model.tokenizer == nullptr)
    bad_request("prompt", "this model has no tokenizer: send the prompt as a list of token ids");
  return {model.tokenizer->encode(text, add_special_tokens), text};
}

}  // namespace

CompletionPrompt completion_prompt(const json& body, const ModelContext& model) {
  bool add_special_tokens = true;
  if (const json* v = field(body, "add_special_tokens")) add_special_tokens = read_bool(*v, "add_special_tokens");
  const json* v = field(body, "prompt");
  if (v == nullptr) bad_request("prompt", "'prompt' is required");
  if (v->is_string()) return text_prompt(v->get_ref<const std::string&>(), model, add_special_tokens);
  if (!v->is_array())
    bad_request("prompt", fmt::format("'prompt': expected a string or a list of token ids, got {}", type_of(*v)));
  if (v->empty()) bad_request("prompt", "'prompt' must not be empty");
  const json& first = (*v)[0];
  if (first.is_string() || first.is_array()) {
    // OpenAI's batched form: a list of prompts. One prompt in a list is that prompt.
    if (v->size() > 1)
      bad_request("prompt", fmt::format("batched prompts (a list of {}) are not supported; send one request per "
                                        "prompt",
                                        v->size()));
    if (first.is_string()) return text_prompt(first.get_ref<const std::string&>(), model, add_special_tokens);
    if (first.empty()) bad_request("prompt", "'prompt' must not be empty");
    return {read_token_ids(first, "prompt", model), std::nullopt};
  }
  return {read_token_ids(*v, "prompt", model), std::nullopt};
}

int32_t read_completion_logprobs(const json& body) {
  if (const json* v = field(body, "logprobs")) return static_cast<int32_t>(read_int(*v, "logprobs", 0, kMaxLogprobs));
  return -1;
}

bool read_echo(const json& body) {
  const json* v = field(body, "echo");
  return v != nullptr && read_bool(*v, "echo");
}

void refuse_unsupported_completion_fields(const json& body, int64_t n) {
  if (const json* v = field(body, "suffix"); v && !read_string(*v, "suffix").empty())
    bad_request("suffix", "'suffix' needs a fill-in-the-middle prompt template, and this model has none");
  if (const json* v = field(body, "best_of")) {
    const int64_t best_of = read_int(*v, "best_of", 1, kMaxChoices);
    if (best_of != n)
      bad_request("best_of", fmt::format("'best_of' ({}) must equal n ({}): choosing the best of several samples "
                                         "is not supported",
                                         best_of, n));
  }
}

void prepend_echo(std::vector<ChoiceOutput>& choices, const ParsedRequest& request) {
  if (!request.echo) return;
  for (ChoiceOutput& c : choices) c.text.insert(0, request.echo_text);
}

}  // namespace fg::server
