// server/openai_request.cpp — see openai_request.h. The sampling and stop fields are read by
// engine/request_json.h's read_request_fields (shared with `generate --prompts`, so that a request
// means the same thing offline and served); everything OpenAI-specific is read here.
#include "server/openai_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <set>

#include "engine/request_json.h"

namespace fg::server {

namespace {

using nlohmann::json;

// A present, non-null field. JSON null means "not given", as OpenAI treats it.
const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string type_of(const json& v) { return v.is_number_integer() ? "integer" : v.type_name(); }

bool read_bool(const json& v, const std::string& param) {
  if (!v.is_boolean()) bad_request(param, fmt::format("'{}': expected true or false, got {}", param, type_of(v)));
  return v.get<bool>();
}

int64_t read_int(const json& v, const std::string& param, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) bad_request(param, fmt::format("'{}': expected an integer, got {}", param, v.dump()));
  const bool huge = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
  const int64_t x = huge ? INT64_MAX : v.get<int64_t>();
  if (huge || x < lo || x > hi)
    bad_request(param, fmt::format("'{}': {} is outside [{}, {}]", param, v.dump(), lo, hi));
  return x;
}

const std::string& read_string(const json& v, const std::string& param) {
  if (!v.is_string()) bad_request(param, fmt::format("'{}': expected a string, got {}", param, type_of(v)));
  return v.get_ref<const std::string&>();
}

// The fields each endpoint knows. The sampling and stop ones are read_request_fields'.
// clang-format off
const std::array<const char*, 16> kSamplingFields = {
    "max_tokens", "max_completion_tokens", "min_tokens", "temperature", "top_p", "top_k", "min_p", "seed",
    "repetition_penalty", "presence_penalty", "frequency_penalty", "stop", "stop_token_ids", "ignore_eos",
    "include_stop_str_in_output", "skip_special_tokens"};

const std::set<std::string>& known_fields(Endpoint endpoint) {
  static const std::set<std::string> completions = {
      "model", "prompt", "n", "stream", "stream_options", "user", "logprobs", "echo", "best_of", "suffix",
      "logit_bias"};
  static const std::set<std::string> chat = {
      "model", "messages", "n", "stream", "stream_options", "user", "logprobs", "top_logprobs", "tools",
      "tool_choice", "functions", "function_call", "logit_bias", "response_format", "parallel_tool_calls",
      "chat_template_kwargs"};
  return endpoint == Endpoint::kCompletions ? completions : chat;
}
// clang-format on

void check_field_names(Endpoint endpoint, const json& body) {
  const auto& known = known_fields(endpoint);
  for (const auto& [key, value] : body.items()) {
    if (value.is_null() || known.contains(key)) continue;
    if (std::find(kSamplingFields.begin(), kSamplingFields.end(), key) != kSamplingFields.end()) continue;
    if (endpoint == Endpoint::kCompletions && key == "messages")
      bad_request(key, "'messages' belongs to /v1/chat/completions; /v1/completions takes a 'prompt'");
    if (endpoint == Endpoint::kChatCompletions && key == "prompt")
      bad_request(key, "'prompt' belongs to /v1/completions; /v1/chat/completions takes 'messages'");
    bad_request(key, fmt::format("unknown field '{}'", key));
  }
}

// Features that would change what the client gets and that fullgraph does not implement are
// refused by name; their neutral values (echo false, logit_bias {}, tool_choice "none", ...) pass.
void refuse_unsupported(Endpoint endpoint, const json& body, int64_t n) {
  if (const json* v = field(body, "logit_bias")) {
    if (!v->is_object()) bad_request("logit_bias", "'logit_bias': expected an object of token id -> bias");
    if (!v->empty()) bad_request("logit_bias", "'logit_bias' is not supported");
  }
  if (endpoint == Endpoint::kCompletions) {
    if (const json* v = field(body, "echo"); v && read_bool(*v, "echo")) bad_request("echo", "'echo' is not supported");
    if (const json* v = field(body, "suffix"); v && !read_string(*v, "suffix").empty())
      bad_request("suffix", "'suffix' (text insertion) is not supported");
    if (const json* v = field(body, "best_of")) {
      const int64_t best_of = read_int(*v, "best_of", 1, kMaxChoices);
      if (best_of != n)
        bad_request("best_of", fmt::format("'best_of' ({}) must equal n ({}): choosing the best of several samples "
                                           "is not supported",
                                           best_of, n));
    }
    return;
  }
  if (const json* v = field(body, "tools")) {
    if (!v->is_array()) bad_request("tools", "'tools': expected a list");
    if (!v->empty()) bad_request("tools", "tool calling ('tools') is not supported");
  }
  if (const json* v = field(body, "tool_choice")) {
    if (!v->is_string() || (*v != "none" && *v != "auto"))
      bad_request("tool_choice", "tool calling ('tool_choice') is not supported; only \"none\" and \"auto\" pass");
  }
  if (field(body, "functions")) bad_request("functions", "function calling ('functions') is not supported");
  if (field(body, "function_call")) bad_request("function_call", "function calling ('function_call') is not supported");
  if (const json* v = field(body, "parallel_tool_calls")) read_bool(*v, "parallel_tool_calls");
  if (const json* v = field(body, "response_format")) {
    if (!v->is_object() || !v->contains("type") || !(*v)["type"].is_string())
      bad_request("response_format", "'response_format': expected {\"type\": \"text\"}");
    const std::string& type = (*v)["type"].get_ref<const std::string&>();
    if (type != "text")
      bad_request("response_format", fmt::format("response_format '{}' is not supported (only \"text\")", type));
    for (const auto& [key, value] : v->items())
      if (key != "type" && !value.is_null())
        bad_request("response_format", fmt::format("'response_format.{}' is not supported", key));
  }
}

std::vector<int32_t> token_ids(const json& list, const std::string& param, const ModelContext& model) {
  std::vector<int32_t> ids;
  ids.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const json& id = list[i];
    if (!id.is_number_integer())
      bad_request(param, fmt::format("'{}[{}]': expected a token id, got {}", param, i, id.dump()));
    const bool huge = id.is_number_unsigned() && id.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
    const int64_t x = huge ? INT64_MAX : id.get<int64_t>();
    if (x < 0 || x >= model.vocab_size)
      bad_request(param, fmt::format("'{}[{}]': {} is not a token id of this model (vocabulary of {})", param, i,
                                     id.dump(), model.vocab_size));
    ids.push_back(static_cast<int32_t>(x));
  }
  return ids;
}

std::vector<int32_t> text_prompt(const std::string& text, const ModelContext& model) {
  if (text.empty()) bad_request("prompt", "'prompt' must not be empty");
  if (model.tokenizer == nullptr)
    bad_request("prompt", "this model has no tokenizer: send the prompt as a list of token ids");
  return model.tokenizer->encode(text, /*add_special_tokens=*/true);
}

std::vector<int32_t> completion_prompt(const json& body, const ModelContext& model) {
  const json* v = field(body, "prompt");
  if (v == nullptr) bad_request("prompt", "'prompt' is required");
  if (v->is_string()) return text_prompt(v->get_ref<const std::string&>(), model);
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
    if (first.is_string()) return text_prompt(first.get_ref<const std::string&>(), model);
    if (first.empty()) bad_request("prompt", "'prompt' must not be empty");
    return token_ids(first, "prompt", model);
  }
  return token_ids(*v, "prompt", model);
}

std::string message_content(const json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array())
    bad_request(param, fmt::format("'{}': expected a string or a list of text parts, got {}", param, type_of(content)));
  // vLLM joins text parts with newlines; so do we, for the same prompt.
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const json& part = content[j];
    const std::string where = fmt::format("{}[{}]", param, j);
    if (!part.is_object())
      bad_request(where, fmt::format("'{}': expected an object {{\"type\": \"text\", ...}}", where));
    const json* type = field(part, "type");
    if (type == nullptr || !type->is_string())
      bad_request(where + ".type", fmt::format("'{}.type' is required", where));
    if (*type != "text")
      bad_request(where + ".type", fmt::format("content type '{}' is not supported (only \"text\")",
                                               type->get_ref<const std::string&>()));
    const json* t = field(part, "text");
    if (t == nullptr) bad_request(where + ".text", fmt::format("'{}.text' is required", where));
    for (const auto& [key, value] : part.items())
      if (key != "type" && key != "text" && !value.is_null())
        bad_request(where + "." + key, fmt::format("'{}.{}' is not supported", where, key));
    if (j > 0) text += '\n';
    text += read_string(*t, where + ".text");
  }
  return text;
}

}  // namespace

nlohmann::ordered_json normalize_chat_messages(const json& messages) {
  if (!messages.is_array())
    bad_request("messages", fmt::format("'messages': expected a list of messages, got {}", type_of(messages)));
  if (messages.empty()) bad_request("messages", "'messages' must not be empty");
  if (messages.size() > kMaxMessages)
    bad_request("messages", fmt::format("at most {} messages, got {}", kMaxMessages, messages.size()));
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    const std::string where = fmt::format("messages[{}]", i);
    if (!m.is_object()) bad_request(where, fmt::format("'{}': expected an object with role and content", where));
    const json* role_value = field(m, "role");
    if (role_value == nullptr) bad_request(where + ".role", fmt::format("'{}.role' is required", where));
    std::string role = read_string(*role_value, where + ".role");
    if (role == "tool" || role == "function")
      bad_request(where + ".role", fmt::format("'{}' messages are not supported (no tool calling)", role));
    if (role == "developer") role = "system";  // OpenAI's newer name for system instructions
    if (role != "system" && role != "user" && role != "assistant")
      bad_request(where + ".role",
                  fmt::format("unknown role '{}' (expected system, developer, user or assistant)", role));
    const json* content = field(m, "content");
    if (content == nullptr) bad_request(where + ".content", fmt::format("'{}.content' is required", where));
    nlohmann::ordered_json message = {{"role", role}, {"content", message_content(*content, where + ".content")}};
    for (const auto& [key, value] : m.items()) {
      if (key == "role" || key == "content" || value.is_null()) continue;
      if (key == "name") {
        message["name"] = read_string(value, where + ".name");
        continue;
      }
      if (key == "tool_calls" || key == "function_call" || key == "tool_call_id")
        bad_request(where + "." + key, fmt::format("'{}.{}': tool calling is not supported", where, key));
      bad_request(where + "." + key, fmt::format("'{}.{}' is not supported", where, key));
    }
    out.push_back(std::move(message));
  }
  return out;
}

namespace {

std::vector<int32_t> chat_prompt(const json& body, const ModelContext& model) {
  const json* messages = field(body, "messages");
  if (messages == nullptr) bad_request("messages", "'messages' is required");
  const nlohmann::ordered_json normalized = normalize_chat_messages(*messages);
  if (model.chat_template == nullptr || model.tokenizer == nullptr)
    bad_request("messages", "this model has no chat template; use /v1/completions");
  ChatRenderOptions options;
  options.add_generation_prompt = true;
  if (const json* kwargs = field(body, "chat_template_kwargs")) {
    if (!kwargs->is_object()) bad_request("chat_template_kwargs", "'chat_template_kwargs': expected an object");
    for (const auto& [key, value] : kwargs->items()) {
      if (key != "enable_thinking" && key != "date_string")
        bad_request("chat_template_kwargs", fmt::format("'chat_template_kwargs.{}' is not supported (allowed: "
                                                        "enable_thinking, date_string)",
                                                        key));
      options.variables.emplace_back(key, nlohmann::ordered_json(value));
    }
  }
  std::string text;
  try {
    text = model.chat_template->render(normalized, options);
  } catch (const Error& e) {
    bad_request("messages", fmt::format("the chat template refused the messages: {}", e.what()));
  }
  return model.tokenizer->encode(text, /*add_special_tokens=*/false);
}

// The largest max_tokens a prompt leaves room for, in the context and in the KV cache (whose
// last token's KV is never computed, hence + 1).
int64_t room_for(int64_t prompt_len, const ModelContext& model) {
  return std::min(model.max_model_len - prompt_len, model.usable_blocks * model.block_size + 1 - prompt_len);
}

}  // namespace

nlohmann::json parse_json_body(std::string_view body) {
  // Nesting outside strings, counted before the parser sees it.
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        throw ApiError(400, fmt::format("the request body nests deeper than {} levels", kMaxJsonDepth));
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  json parsed;
  try {
    parsed = json::parse(body);
  } catch (const json::exception& e) {
    throw ApiError(400, fmt::format("the request body is not valid JSON: {}", e.what()));
  }
  if (!parsed.is_object())
    throw ApiError(400, fmt::format("the request body must be a JSON object, got {}", type_of(parsed)));
  return parsed;
}

ParsedRequest parse_openai_request(Endpoint endpoint, const json& body, const ModelContext& model) {
  FG_CHECK(!model.served_names.empty(), "the server has no model name");
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
  ParsedRequest r;
  r.endpoint = endpoint;
  const bool chat = endpoint == Endpoint::kChatCompletions;

  // The model first: a request for another model is a 404 whatever else it holds.
  r.model = model.served_names.front();
  if (const json* v = field(body, "model")) {
    const std::string& name = read_string(*v, "model");
    if (std::find(model.served_names.begin(), model.served_names.end(), name) == model.served_names.end())
      throw ApiError(404, fmt::format("The model '{}' does not exist; this server serves '{}'", name, r.model), "model",
                     "model_not_found");
  }
  check_field_names(endpoint, body);
  if (const json* v = field(body, "n")) r.n = read_int(*v, "n", 1, kMaxChoices);
  if (const json* v = field(body, "stream")) r.stream = read_bool(*v, "stream");
  if (const json* v = field(body, "stream_options")) {
    if (!r.stream) bad_request("stream_options", "'stream_options' is only allowed with \"stream\": true");
    if (!v->is_object()) bad_request("stream_options", "'stream_options': expected an object");
    for (const auto& [key, value] : v->items()) {
      if (value.is_null()) continue;
      if (key == "include_usage")
        r.include_usage = read_bool(value, "stream_options.include_usage");
      else if (key == "continuous_usage_stats" && !read_bool(value, "stream_options.continuous_usage_stats"))
        continue;
      else
        bad_request("stream_options", fmt::format("'stream_options.{}' is not supported", key));
    }
  }
  if (const json* v = field(body, "user")) read_string(*v, "user");
  refuse_unsupported(endpoint, body, r.n);

  // Logprobs: completions take a count; chat takes a flag plus top_logprobs.
  r.top_logprobs = -1;
  if (!chat) {
    if (const json* v = field(body, "logprobs"))
      r.top_logprobs = static_cast<int32_t>(read_int(*v, "logprobs", 0, kMaxLogprobs));
  } else {
    const json* flag = field(body, "logprobs");
    const bool want = flag != nullptr && read_bool(*flag, "logprobs");
    if (const json* v = field(body, "top_logprobs")) {
      const int64_t k = read_int(*v, "top_logprobs", 0, kMaxLogprobs);
      if (!want) bad_request("top_logprobs", "'top_logprobs' needs \"logprobs\": true");
      r.top_logprobs = static_cast<int32_t>(k);
    } else if (want) {
      r.top_logprobs = 0;
    }
  }

  r.prompt = chat ? chat_prompt(body, model) : completion_prompt(body, model);
  const int64_t prompt_len = static_cast<int64_t>(r.prompt.size());
  const char* prompt_param = chat ? "messages" : "prompt";
  if (prompt_len == 0) bad_request(prompt_param, "the prompt encodes to no tokens");
  for (int32_t id : r.prompt)
    if (id < 0 || id >= model.vocab_size)  // only a tokenizer larger than the model's embedding does this
      bad_request(prompt_param, fmt::format("the prompt encodes to token id {}, outside the model's vocabulary of {}",
                                            id, model.vocab_size));
  if (prompt_len >= model.max_model_len)
    bad_request(prompt_param, fmt::format("the prompt has {} tokens but this model's maximum context length is {} "
                                          "tokens, which leaves no room for a completion",
                                          prompt_len, model.max_model_len));

  // Completions default to 16 new tokens (OpenAI's default); chat to whatever room is left.
  RequestSpec& spec = r.spec;
  spec.stop.max_tokens = chat ? std::max<int64_t>(1, room_for(prompt_len, model)) : 16;
  json sampling = json::object();
  for (const char* name : kSamplingFields)
    if (const json* v = field(body, name)) sampling[name] = *v;
  try {
    read_request_fields(sampling, spec);
  } catch (const RequestFieldError& e) {
    bad_request(e.param(), e.what());
  }
  if (!spec.stop.stop.empty() && model.tokenizer == nullptr)
    bad_request("stop", "stop strings need a tokenizer and this model has none (use stop_token_ids)");
  for (size_t i = 0; i < spec.stop.stop_token_ids.size(); ++i)
    if (spec.stop.stop_token_ids[i] >= model.vocab_size)
      bad_request("stop_token_ids", fmt::format("'stop_token_ids[{}]': {} is not a token id of this model (vocabulary "
                                                "of {})",
                                                i, spec.stop.stop_token_ids[i], model.vocab_size));

  spec.sampling.num_logprobs = r.top_logprobs;

  // The request must fit the context and, whole, the KV cache.
  const int64_t max_tokens = spec.stop.max_tokens;
  const char* max_param = field(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  if (prompt_len + max_tokens > model.max_model_len)
    bad_request(max_param, fmt::format("This model's maximum context length is {} tokens. However, you requested {} "
                                       "tokens ({} in the {}, {} for the completion). Reduce the length of the {} "
                                       "or of the completion.",
                                       model.max_model_len, prompt_len + max_tokens, prompt_len,
                                       chat ? "messages" : "prompt", max_tokens, chat ? "messages" : "prompt"));
  const int64_t kv_tokens = prompt_len + max_tokens - 1;
  const int64_t blocks = kv_tokens / model.block_size + (kv_tokens % model.block_size != 0 ? 1 : 0);
  if (blocks > model.usable_blocks)
    bad_request(max_param, fmt::format("the request needs {} KV-cache blocks ({} prompt + {} new tokens) but the "
                                       "cache holds {}; it could never run",
                                       blocks, prompt_len, max_tokens, model.usable_blocks));
  return r;
}

}  // namespace fg::server
