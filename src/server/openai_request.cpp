// server/openai_request.cpp — see openai_request.h. The order of the checks is the order a
// client would want its mistakes reported in: the model first (a request for another model is a
// 404 whatever else it holds), then the field names, then each field.
#include "server/openai_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <set>

#include "core/json/strict_json.h"
#include "engine/request_json.h"
#include "server/chat_tools.h"
#include "server/completion_request.h"
#include "server/ignored_fields.h"
#include "server/openai_response.h"
#include "server/request_reading.h"
#include "server/structured_output_request.h"

namespace fg::server {

namespace {

using nlohmann::json;

// The fields each endpoint knows besides request_field_names() (sampling, stop, scheduling) and
// the ignored ones.
const std::set<std::string, std::less<>>& known_fields(Endpoint endpoint) {
  static const std::set<std::string, std::less<>> completions = {
      "model", "prompt", "n", "stream", "stream_options", "logprobs", "echo", "best_of", "suffix",
      "add_special_tokens", "truncate_prompt_tokens", "request_id"};
  static const std::set<std::string, std::less<>> chat = [] {
    std::set<std::string, std::less<>> names = {
        "model", "messages", "n", "stream", "stream_options", "logprobs", "top_logprobs", "tools", "tool_choice",
        "functions", "function_call", "response_format", "parallel_tool_calls", "echo", "truncate_prompt_tokens",
        "request_id"};
    for (std::string_view name : kChatPromptFields) names.emplace(name);
    return names;
  }();
  return endpoint == Endpoint::kCompletions ? completions : chat;
}

bool is_request_field(std::string_view name) {
  const auto& names = request_field_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

void check_field_names(Endpoint endpoint, const json& body) {
  const auto& known = known_fields(endpoint);
  for (const auto& [key, value] : body.items()) {
    if (value.is_null() || known.contains(key) || is_request_field(key)) continue;
    if (is_ignored_field(key)) {
      accept_ignored_field(key, value);
      continue;
    }
    if (endpoint == Endpoint::kCompletions && key == "messages")
      bad_request(key, "'messages' belongs to /v1/chat/completions; /v1/completions takes a 'prompt'");
    if (endpoint == Endpoint::kChatCompletions && key == "prompt")
      bad_request(key, "'prompt' belongs to /v1/completions; /v1/chat/completions takes 'messages'");
    bad_request(key, fmt::format("unknown field '{}'", clip_for_message(key, 80)));
  }
}

void read_stream_options(const json& body, ParsedRequest& r) {
  const json* v = field(body, "stream_options");
  if (v == nullptr) return;
  if (!r.stream) bad_request("stream_options", "'stream_options' is only allowed with \"stream\": true");
  if (!v->is_object()) bad_request("stream_options", "'stream_options': expected an object");
  bool continuous = false;
  for (const auto& [key, value] : v->items()) {
    if (value.is_null()) continue;
    if (key == "include_usage")
      r.include_usage = read_bool(value, "stream_options.include_usage");
    else if (key == "continuous_usage_stats")
      continuous = read_bool(value, "stream_options.continuous_usage_stats");
    else
      bad_request("stream_options", fmt::format("'stream_options.{}' is not supported", clip_for_message(key, 80)));
  }
  // vLLM's rule: per-chunk usage only where usage is asked for at all.
  r.continuous_usage = continuous && r.include_usage;
}

// Printable ASCII: the id travels in JSON, log lines and, through X-Request-Id, headers. `param`
// is "request_id" for the body's field, "" for the header.
void check_request_id(std::string_view id, const std::string& param, std::string_view what) {
  if (id.empty() || id.size() > kMaxRequestIdBytes)
    bad_request(param, fmt::format("{}: must be 1 to {} characters, got {}", what, kMaxRequestIdBytes, id.size()));
  for (char c : id)
    if (c < 0x20 || c > 0x7e) bad_request(param, fmt::format("{}: only printable ASCII characters are allowed", what));
}


void check_prompt(const ParsedRequest& r, const ModelContext& model, const char* prompt_param) {
  const int64_t prompt_len = static_cast<int64_t>(r.prompt.size());
  if (prompt_len == 0) bad_request(prompt_param, "the prompt encodes to no tokens");
  for (int32_t id : r.prompt)
    if (id < 0 || id >= model.vocab_size)  // only a tokenizer larger than the model's embedding does this
      bad_request(prompt_param, fmt::format("the prompt encodes to token id {}, outside the model's vocabulary of {}",
                                            id, model.vocab_size));
  if (prompt_len >= model.max_model_len)
    bad_request(prompt_param, fmt::format("the prompt has {} tokens but this model's maximum context length is {} "
                                          "tokens, which leaves no room for a completion",
                                          prompt_len, model.max_model_len));
}

// The request must fit the context and, whole, the KV cache.
void check_fits(const ParsedRequest& r, const json& body, const ModelContext& model) {
  const bool chat = r.endpoint == Endpoint::kChatCompletions;
  const int64_t prompt_len = static_cast<int64_t>(r.prompt.size());
  const int64_t max_tokens = r.spec.stop.max_tokens;
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
}

void read_spec(const json& body, const ModelContext& model, ParsedRequest& r) {
  RequestSpec& spec = r.spec;
  const int64_t prompt_len = static_cast<int64_t>(r.prompt.size());
  // Completions default to 16 new tokens (OpenAI's default); chat to the room left, capped by
  // generation_config.json's max_new_tokens (vLLM's rule).
  if (r.endpoint == Endpoint::kChatCompletions) {
    int64_t room = room_for(prompt_len, model);
    if (model.sampling_defaults.max_tokens) room = std::min(room, *model.sampling_defaults.max_tokens);
    spec.stop.max_tokens = std::max<int64_t>(1, room);
  } else {
    spec.stop.max_tokens = 16;
  }
  // logprobs is each endpoint's own (a count, or a flag with top_logprobs): read above.
  json fields = json::object();
  for (std::string_view name : request_field_names())
    if (name != "logprobs")
      if (const json* v = field(body, std::string(name).c_str())) fields[std::string(name)] = *v;
  try {
    read_request_fields(fields, spec, model.sampling_defaults, model.vocab_size);
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
  if (spec.priority != 0 && !model.priority_scheduling)
    bad_request("priority", "'priority' other than 0 needs priority scheduling, which this server does not use "
                            "(--scheduling-policy priority)");
  spec.sampling.num_logprobs = r.top_logprobs;
  // vLLM refuses them too: a stream has no place for them (echo's implied ones go in its first chunk).
  if (r.stream && spec.prompt_logprobs >= 0)
    bad_request("prompt_logprobs", "'prompt_logprobs' are not available when 'stream' is true");
  // vLLM: echo with logprobs returns the prompt's logprobs too, at the same count.
  if (r.echo && r.top_logprobs >= 0 && field(body, "prompt_logprobs") == nullptr)
    spec.prompt_logprobs = r.top_logprobs;
  // --max-logprobs, as vLLM checks it: the most top logprobs a request may ask for.
  const char* asked = r.endpoint == Endpoint::kChatCompletions ? "top_logprobs" : "logprobs";
  for (const auto& [name, count] : {std::pair{asked, r.top_logprobs}, {"prompt_logprobs", spec.prompt_logprobs}})
    if (count > model.max_logprobs)
      bad_request(name, fmt::format("'{}' asks for {} logprobs; this server returns at most {} (--max-logprobs)",
                                    name, count, model.max_logprobs));
}

}  // namespace

// The KV cache's last token's KV is never computed, hence + 1.
int64_t room_for(int64_t prompt_len, const ModelContext& model) {
  return std::min(model.max_model_len - prompt_len, model.usable_blocks * model.block_size + 1 - prompt_len);
}

void truncate_prompt(const json& body, const ModelContext& model, std::vector<int32_t>& prompt, bool& truncated) {
  const json* v = field(body, "truncate_prompt_tokens");
  if (v == nullptr) return;
  int64_t keep = read_int(*v, "truncate_prompt_tokens", -1, std::numeric_limits<int64_t>::max());
  if (keep == 0) bad_request("truncate_prompt_tokens", "'truncate_prompt_tokens' must be at least 1 (or -1)");
  if (keep == -1) keep = model.max_model_len;
  if (keep > model.max_model_len)
    bad_request("truncate_prompt_tokens",
                fmt::format("'truncate_prompt_tokens' ({}) is more than this model's maximum context length ({})",
                            keep, model.max_model_len));
  if (static_cast<int64_t>(prompt.size()) <= keep) return;
  prompt.erase(prompt.begin(), prompt.end() - keep);
  truncated = true;
}

json parse_json_body(std::string_view body) {
  JsonDocument document;
  try {
    document = parse_strict_json(body, JsonSource{"request body", ""}, JsonLimits{kMaxJsonBodyBytes, kMaxJsonDepth});
  } catch (const Error& e) {
    throw ApiError(400, e.what());
  }
  if (!document.value.is_object())
    throw ApiError(400, fmt::format("the request body must be a JSON object, got {}", type_of(document.value)));
  return std::move(document.value);
}

ParsedRequest parse_openai_request(Endpoint endpoint, const json& body, const ModelContext& model, bool compile) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
  ParsedRequest r;
  r.endpoint = endpoint;
  const bool chat = endpoint == Endpoint::kChatCompletions;
  r.model = served_model(body, model);
  check_field_names(endpoint, body);
  if (const json* v = field(body, "n")) r.n = read_int(*v, "n", 1, kMaxChoices);
  if (const json* v = field(body, "stream")) r.stream = read_bool(*v, "stream");
  read_stream_options(body, r);
  if (const json* v = field(body, "request_id")) {
    r.request_id = read_string(*v, "request_id");
    check_request_id(r.request_id, "request_id", "'request_id'");
  }

  bool text_given = false;
  std::optional<StructuredOutput> tool_constraint;
  if (chat) {
    refuse_unsupported_chat_fields(body);
    r.top_logprobs = read_chat_logprobs(body);
    ChatPromptOptions options = read_chat_prompt_options(body);
    ChatTools tools = read_chat_tools(body, options, model);
    if (!tools.template_tools.is_null()) options.template_variables.emplace_back("tools", tools.template_tools);
    r.prompt = chat_prompt_tokens(body, model, options);
    r.chat_output = std::move(tools.output);
    tool_constraint = std::move(tools.constraint);
  } else {
    refuse_unsupported_completion_fields(body, r.n);
    r.top_logprobs = read_completion_logprobs(body);
    r.echo = read_echo(body);
    CompletionPrompt prompt = completion_prompt(body, model);
    r.prompt = std::move(prompt.tokens);
    if (prompt.text) {
      r.echo_text = std::move(*prompt.text);
      text_given = true;
    }
  }
  bool truncated = false;
  truncate_prompt(body, model, r.prompt, truncated);
  check_prompt(r, model, chat ? "messages" : "prompt");
  if (r.echo && (truncated || !text_given)) {
    // The prompt as the model sees it, special tokens included, as vLLM detokenizes it.
    if (model.tokenizer == nullptr)
      bad_request("echo", "'echo' of a token-id prompt needs a tokenizer, and this model has none");
    r.echo_text = model.tokenizer->decode(r.prompt, /*skip_special_tokens=*/false);
  }
  if (!r.echo) r.echo_text.clear();

  read_spec(body, model, r);
  if (tool_constraint) {
    if (r.spec.structured_output)
      bad_request("tool_choice", fmt::format("tool_choice \"required\" or a named function constrains the answer, and "
                                             "so does '{}': give one of them",
                                             r.spec.structured_output->source));
    r.spec.structured_output = std::move(tool_constraint);
  }
  if (r.spec.structured_output) r.spec.structured_output_after = constraint_start_token(r.chat_output, model);
  check_fits(r, body, model);
  if (compile) check_structured_output(r.spec, model);
  return r;
}

std::string response_id(const ParsedRequest& request, std::string_view x_request_id) {
  const char* prefix = request.endpoint == Endpoint::kChatCompletions ? "chatcmpl-" : "cmpl-";
  if (!x_request_id.empty()) {
    check_request_id(x_request_id, "", "the X-Request-Id header");
    return prefix + std::string(x_request_id);
  }
  if (!request.request_id.empty()) return prefix + request.request_id;
  return new_response_id(prefix);
}

}  // namespace fg::server
