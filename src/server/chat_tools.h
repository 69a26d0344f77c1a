// server/chat_tools.h — a chat request's tools, tool choice and reasoning, read against what the
// server runs (--enable-auto-tool-choice, --tool-call-parser, --reasoning-parser): the tools the
// chat template is given, how the answer is read (chat_output.h), and the constraint that makes
// the answer parse as calls for tool_choice "required" or a named function (tool_schema.h). With a
// reasoning parser and thinking on, that constraint (or any other) applies once the model's
// </think> token has been generated.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "grammar/structured_output.h"
#include "server/chat_output.h"
#include "server/chat_request.h"
#include "server/model_context.h"

namespace fg::server {

struct ChatTools {
  nlohmann::ordered_json template_tools;  // null: the template is given no tools
  ChatOutputOptions output;
  std::optional<StructuredOutput> constraint;  // tool_choice required or named
};

// Reads tools, tool_choice and parallel_tool_calls from `body`; `prompt` gives
// chat_template_kwargs.enable_thinking. Throws ApiError (400) naming the field.
ChatTools read_chat_tools(const nlohmann::json& body, const ChatPromptOptions& prompt, const ModelContext& model);

// The token that ends a reasoning model's thinking (its "</think>" when that is one token of the
// vocabulary), after which an output constraint applies; -1 when constraints apply from the
// first token (no reasoning parser, thinking off, or no such token).
int32_t constraint_start_token(const ChatOutputOptions& output, const ModelContext& model);

}  // namespace fg::server
