// server/tokenize_endpoints.cpp — see tokenize_endpoints.h.
#include "server/tokenize_endpoints.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string_view>

#include "core/json/strict_json.h"
#include "server/api_error.h"
#include "server/chat_request.h"
#include "server/ignored_fields.h"
#include "server/request_reading.h"

namespace fg::server {

namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

template <size_t N>
void check_fields(const json& body, const std::string_view (&known)[N]) {
  for (const auto& [key, value] : body.items()) {
    if (value.is_null() || std::find(std::begin(known), std::end(known), key) != std::end(known)) continue;
    if (is_ignored_field(key)) {
      accept_ignored_field(key, value);
      continue;
    }
    bad_request(key, fmt::format("unknown field '{}'", clip_for_message(key, 80)));
  }
}

const Tokenizer& require_tokenizer(const ModelContext& model, const char* param) {
  if (model.tokenizer == nullptr) bad_request(param, "this model has no tokenizer");
  return *model.tokenizer;
}

// transformers' convert_ids_to_tokens: the vocabulary's string for the id.
std::string token_string(const Tokenizer& tokenizer, int32_t id) {
  if (auto token = tokenizer.id_to_token(id)) return *token;
  return tokenizer.decode(std::span<const int32_t>(&id, 1), /*skip_special_tokens=*/false);
}

}  // namespace

ojson tokenize_response(const json& body, const ModelContext& model) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
  served_model(body, model);
  const bool chat = field(body, "messages") != nullptr;
  if (chat && field(body, "prompt") != nullptr)
    bad_request("messages", "give either 'prompt' or 'messages', not both");
  bool return_token_strs = false;
  if (const json* v = field(body, "return_token_strs")) return_token_strs = read_bool(*v, "return_token_strs");

  std::vector<int32_t> tokens;
  if (chat) {
    static constexpr std::string_view kKnown[] = {"model", "messages", "add_generation_prompt",
                                                  "continue_final_message", "add_special_tokens",
                                                  "chat_template_kwargs", "return_token_strs", "tools"};
    check_fields(body, kKnown);
    if (const json* v = field(body, "tools")) {
      if (!v->is_array()) bad_request("tools", "'tools': expected a list");
      if (!v->empty()) bad_request("tools", "tool calling ('tools') is not supported");
    }
    tokens = chat_prompt_tokens(body, model, read_chat_prompt_options(body));
  } else {
    static constexpr std::string_view kKnown[] = {"model", "prompt", "add_special_tokens", "return_token_strs"};
    check_fields(body, kKnown);
    const json* prompt = field(body, "prompt");
    if (prompt == nullptr) bad_request("prompt", "'prompt' (a string) or 'messages' is required");
    const std::string& text = read_string(*prompt, "prompt");
    bool add_special_tokens = true;
    if (const json* v = field(body, "add_special_tokens")) add_special_tokens = read_bool(*v, "add_special_tokens");
    tokens = require_tokenizer(model, "prompt").encode(text, add_special_tokens);
  }

  ojson out = {{"count", tokens.size()}, {"max_model_len", model.max_model_len}, {"tokens", tokens}};
  // vLLM's response model always has the key: null unless asked for.
  out["token_strs"] = nullptr;
  if (return_token_strs) {
    ojson strs = ojson::array();
    for (int32_t id : tokens) strs.push_back(token_string(*model.tokenizer, id));
    out["token_strs"] = std::move(strs);
  }
  return out;
}

ojson detokenize_response(const json& body, const ModelContext& model) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
  served_model(body, model);
  static constexpr std::string_view kKnown[] = {"model", "tokens"};
  check_fields(body, kKnown);
  const json* list = field(body, "tokens");
  if (list == nullptr) bad_request("tokens", "'tokens' (a list of token ids) is required");
  if (!list->is_array())
    bad_request("tokens", fmt::format("'tokens': expected a list of token ids, got {}", type_of(*list)));
  const std::vector<int32_t> ids = read_token_ids(*list, "tokens", model);
  // vLLM decodes with transformers' default: special tokens kept.
  return {{"prompt", require_tokenizer(model, "tokens").decode(ids, /*skip_special_tokens=*/false)}};
}

}  // namespace fg::server
