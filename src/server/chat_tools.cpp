// server/chat_tools.cpp — see chat_tools.h.
#include "server/chat_tools.h"

#include "server/api_error.h"
#include "server/request_reading.h"
#include "server/tool_schema.h"

namespace fg::server {

ChatTools read_chat_tools(const nlohmann::json& body, const ChatPromptOptions& prompt, const ModelContext& model) {
  ChatTools out;
  out.output.reasoning = model.reasoning_parser;
  for (const auto& [name, value] : prompt.template_variables)
    if (name == "enable_thinking" && value.is_boolean()) out.output.thinking_enabled = value.get<bool>();

  const nlohmann::json* tools_field = field(body, "tools");
  const std::vector<ToolDefinition> tools = tools_field ? read_tools(*tools_field) : std::vector<ToolDefinition>{};
  const nlohmann::json* choice_field = field(body, "tool_choice");
  const ToolChoice choice = read_tool_choice(choice_field ? *choice_field : nlohmann::json(nullptr), tools,
                                             model.enable_auto_tool_choice && model.tool_call_parser.has_value());
  bool parallel = true;
  if (const nlohmann::json* v = field(body, "parallel_tool_calls")) parallel = read_bool(*v, "parallel_tool_calls");
  if (!tools.empty()) out.template_tools = nlohmann::ordered_json::parse((*tools_field).dump());

  switch (choice.mode) {
    case ToolChoiceMode::kNone: break;
    case ToolChoiceMode::kAuto: out.output.tools = model.tool_call_parser; break;
    case ToolChoiceMode::kRequired: out.output.tools = ToolCallFormat::kRequired; break;
    case ToolChoiceMode::kNamed:
      out.output.tools = ToolCallFormat::kNamed;
      out.output.function_name = choice.name;
      break;
  }
  if (const std::optional<nlohmann::json> schema = tool_choice_schema(tools, choice, parallel)) {
    StructuredOutput c;
    c.kind = StructuredOutputKind::kJsonSchema;
    c.text = schema->dump();
    c.source = "tool_choice";
    // Calls are read by a program and their arguments re-serialized: no whitespace beyond JSON's
    // separators (a model that wanders in whitespace cannot run the call past max_tokens).
    c.any_whitespace = false;
    out.constraint = std::move(c);
  }
  return out;
}

int32_t constraint_start_token(const ChatOutputOptions& output, const ModelContext& model) {
  if (!output.reasoning || !output.thinking_enabled || model.tokenizer == nullptr) return -1;
  return model.tokenizer->token_to_id("</think>").value_or(-1);
}

}  // namespace fg::server
