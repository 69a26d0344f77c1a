// server/chat_request.h — the chat-specific part of a request (/v1/chat/completions, and
// /tokenize given messages): messages validated and flattened for the template, the rendering
// options vLLM takes (add_generation_prompt, continue_final_message, add_special_tokens,
// chat_template_kwargs), the prompt's token ids, chat's logprobs flags, and the refusal of the
// chat features fullgraph does not implement (tools, functions, response formats).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/model_context.h"

namespace fg::server {

inline constexpr size_t kMaxMessages = 1024;

// Chat messages (already validated) with each content flattened to a string, as the template
// expects them. Throws ApiError naming the message and field at fault.
nlohmann::ordered_json normalize_chat_messages(const nlohmann::json& messages);

struct ChatPromptOptions {
  bool add_generation_prompt = true;    // end with the assistant's turn opening
  bool continue_final_message = false;  // leave the last message open, for the model to continue
  bool add_special_tokens = false;      // the template writes them; true adds the tokenizer's too
  std::vector<std::pair<std::string, nlohmann::ordered_json>> template_variables;  // chat_template_kwargs
};

// The fields read_chat_prompt_options() reads.
inline constexpr std::string_view kChatPromptFields[] = {"add_generation_prompt", "continue_final_message",
                                                         "add_special_tokens", "chat_template_kwargs"};

// Reads them from `body`. continue_final_message with add_generation_prompt explicitly true is a
// 400 (the last message cannot be both continued and followed by a new turn); with it omitted,
// continuing turns it off, which is what vLLM's documented use sends.
ChatPromptOptions read_chat_prompt_options(const nlohmann::json& body);

// Renders body["messages"] through the model's template and encodes it. Throws ApiError (400,
// param "messages") without a template or tokenizer, or when the template refuses the messages.
std::vector<int32_t> chat_prompt_tokens(const nlohmann::json& body, const ModelContext& model,
                                        const ChatPromptOptions& options);

// transformers' continue_final_message: `rendered` cut right after the last occurrence of the
// final message's content (its trailing whitespace kept only where the template kept it), so
// that the end-of-turn the template wrote after it is gone. Throws ApiError (400, param
// "continue_final_message") when the template did not copy the content.
std::string cut_after_final_message(const std::string& rendered, const std::string& final_content);

// Chat's logprobs: "logprobs": true, and "top_logprobs" (which needs it). -1: none.
int32_t read_chat_logprobs(const nlohmann::json& body);

// functions, function_call (the deprecated function calling) and echo: a 400 naming the field
// unless absent (echo: false); parallel_tool_calls must be a bool. (tools and tool_choice are
// read by chat_tools.h; response_format with the other request fields:
// engine/structured_output_json.h.)
void refuse_unsupported_chat_fields(const nlohmann::json& body);

}  // namespace fg::server
