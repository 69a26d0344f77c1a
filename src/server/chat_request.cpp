// server/chat_request.cpp — see chat_request.h.
#include "server/chat_request.h"

#include <fmt/format.h>

#include "core/json/strict_json.h"
#include "sampling/sampling_params.h"
#include "server/api_error.h"
#include "server/request_reading.h"

namespace fg::server {

namespace {

using nlohmann::json;

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
                                               clip_for_message(type->get_ref<const std::string&>(), 80)));
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

// Python's str.strip() set, in ASCII: what transformers strips around the final message.
constexpr std::string_view kSpace = " \t\n\r\f\v";

std::string_view strip(std::string_view s) {
  const size_t first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kSpace) - first + 1);
}

std::string_view lstrip(std::string_view s) {
  const size_t first = s.find_first_not_of(kSpace);
  return first == std::string_view::npos ? std::string_view{} : s.substr(first);
}

}  // namespace

namespace {

// An assistant message's tool_calls as chat templates read them: OpenAI's {id, type, function:
// {name, arguments}}, with the arguments' JSON text parsed into an object (as vLLM hands them to
// the template: Llama's and Qwen's templates write `arguments | tojson`).
nlohmann::ordered_json template_tool_calls(const json& calls, const std::string& where) {
  if (!calls.is_array()) bad_request(where, fmt::format("'{}': expected a list of tool calls", where));
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", where, i);
    const json& call = calls[i];
    if (!call.is_object()) bad_request(at, fmt::format("'{}': expected an object", at));
    const json* function = field(call, "function");
    if (function == nullptr || !function->is_object())
      bad_request(at + ".function", fmt::format("'{}.function' must be an object with name and arguments", at));
    const json* name = field(*function, "name");
    if (name == nullptr) bad_request(at + ".function.name", fmt::format("'{}.function.name' is required", at));
    nlohmann::ordered_json entry = {{"type", "function"}};
    if (const json* id = field(call, "id")) entry["id"] = read_string(*id, at + ".id");
    nlohmann::ordered_json arguments = nlohmann::ordered_json::object();
    if (const json* a = field(*function, "arguments")) {
      const std::string& text = read_string(*a, at + ".function.arguments");
      arguments = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (arguments.is_discarded() || !arguments.is_object())
        bad_request(at + ".function.arguments",
                    fmt::format("'{}.function.arguments' must be a JSON object's text", at));
    }
    entry["function"] = {{"name", read_string(*name, at + ".function.name")}, {"arguments", std::move(arguments)}};
    out.push_back(std::move(entry));
  }
  return out;
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
    if (role == "function")
      bad_request(where + ".role", "'function' messages (the deprecated function calling) are not supported; use tools");
    if (role == "developer") role = "system";  // OpenAI's newer name for system instructions
    if (role != "system" && role != "user" && role != "assistant" && role != "tool")
      bad_request(where + ".role",
                  fmt::format("unknown role '{}' (expected system, developer, user, assistant or tool)",
                              clip_for_message(role, 80)));
    const json* content = field(m, "content");
    const json* calls = role == "assistant" ? field(m, "tool_calls") : nullptr;
    if (content == nullptr && calls == nullptr)
      bad_request(where + ".content", fmt::format("'{}.content' is required", where));
    nlohmann::ordered_json message = {
        {"role", role}, {"content", content ? message_content(*content, where + ".content") : ""}};
    for (const auto& [key, value] : m.items()) {
      if (key == "role" || key == "content" || value.is_null()) continue;
      if (key == "name") {
        message["name"] = read_string(value, where + ".name");
        continue;
      }
      if (key == "tool_calls" && role == "assistant") {
        message["tool_calls"] = template_tool_calls(value, where + ".tool_calls");
        continue;
      }
      if (key == "tool_call_id" && role == "tool") {
        message["tool_call_id"] = read_string(value, where + ".tool_call_id");
        continue;
      }
      bad_request(where + "." + key, fmt::format("'{}.{}' is not supported", where, key));
    }
    out.push_back(std::move(message));
  }
  return out;
}

ChatPromptOptions read_chat_prompt_options(const json& body) {
  ChatPromptOptions options;
  const json* generation = field(body, "add_generation_prompt");
  if (generation) options.add_generation_prompt = read_bool(*generation, "add_generation_prompt");
  if (const json* v = field(body, "continue_final_message"))
    options.continue_final_message = read_bool(*v, "continue_final_message");
  if (options.continue_final_message) {
    if (generation && options.add_generation_prompt)
      bad_request("continue_final_message",
                  "'continue_final_message' and 'add_generation_prompt' cannot both be true: the last message is "
                  "either continued or followed by the assistant's turn");
    options.add_generation_prompt = false;
  }
  if (const json* v = field(body, "add_special_tokens"))
    options.add_special_tokens = read_bool(*v, "add_special_tokens");
  if (const json* kwargs = field(body, "chat_template_kwargs")) {
    if (!kwargs->is_object()) bad_request("chat_template_kwargs", "'chat_template_kwargs': expected an object");
    for (const auto& [key, value] : kwargs->items()) {
      if (key != "enable_thinking" && key != "date_string")
        bad_request("chat_template_kwargs", fmt::format("'chat_template_kwargs.{}' is not supported (allowed: "
                                                        "enable_thinking, date_string)",
                                                        clip_for_message(key, 80)));
      options.template_variables.emplace_back(key, nlohmann::ordered_json(value));
    }
  }
  return options;
}

std::string cut_after_final_message(const std::string& rendered, const std::string& final_content) {
  const std::string_view stripped = strip(final_content);
  const size_t at = rendered.rfind(stripped);
  if (at == std::string::npos)
    bad_request("continue_final_message",
                "'continue_final_message': the chat template does not copy the final message into the prompt, so "
                "there is nothing to continue");
  const std::string_view kept = lstrip(final_content);
  if (rendered.compare(at, kept.size(), kept) == 0) return rendered.substr(0, at + kept.size());
  return rendered.substr(0, at + stripped.size());  // the template trimmed its trailing space
}

std::vector<int32_t> chat_prompt_tokens(const json& body, const ModelContext& model, const ChatPromptOptions& options) {
  const json* messages = field(body, "messages");
  if (messages == nullptr) bad_request("messages", "'messages' is required");
  const nlohmann::ordered_json normalized = normalize_chat_messages(*messages);
  if (model.chat_template == nullptr || model.tokenizer == nullptr)
    bad_request("messages", "this model has no chat template; use /v1/completions");
  ChatRenderOptions render;
  render.add_generation_prompt = options.add_generation_prompt;
  render.variables = options.template_variables;
  std::string text;
  try {
    text = model.chat_template->render(normalized, render);
  } catch (const Error& e) {
    bad_request("messages", fmt::format("the chat template refused the messages: {}", clip_for_message(e.what(), 400)));
  }
  if (options.continue_final_message)
    text = cut_after_final_message(text, normalized.back()["content"].get_ref<const std::string&>());
  return model.tokenizer->encode(text, options.add_special_tokens);
}

int32_t read_chat_logprobs(const json& body) {
  const json* flag = field(body, "logprobs");
  const bool want = flag != nullptr && read_bool(*flag, "logprobs");
  if (const json* v = field(body, "top_logprobs")) {
    const int64_t k = read_int(*v, "top_logprobs", 0, kMaxLogprobs);
    if (!want) bad_request("top_logprobs", "'top_logprobs' needs \"logprobs\": true");
    return static_cast<int32_t>(k);
  }
  return want ? 0 : -1;
}

void refuse_unsupported_chat_fields(const json& body) {
  if (field(body, "functions")) bad_request("functions", "function calling ('functions') is not supported");
  if (field(body, "function_call")) bad_request("function_call", "function calling ('function_call') is not supported");
  if (const json* v = field(body, "parallel_tool_calls")) read_bool(*v, "parallel_tool_calls");
  // vLLM's chat echo repeats the last message in the answer; nothing here implements it.
  if (const json* v = field(body, "echo"); v && read_bool(*v, "echo"))
    bad_request("echo", "'echo' (repeating the last message) is not supported for chat completions");
}

}  // namespace fg::server
