// server/tool_schema.h — a chat request's `tools` and `tool_choice`, validated, and the JSON
// schema that the grammar engine enforces for tool_choice "required" and a named function, so
// that the output always parses as calls (tool_call_parser.h's kRequired and kNamed formats).
//
// The schemas are vLLM's (ChatCompletionRequest._get_json_schema_from_tool, vllm/entrypoints/
// openai/protocol.py): for "required", an array of at least one object, each anyOf over the
// tools of {"name": that tool's name (enum of one), "parameters": its parameters schema}, both
// required, with every tool's "$defs" moved up to the array's own "$defs" (two tools defining one
// name differently is refused, as vLLM refuses it); for a named function, that function's
// parameters schema, the output being the arguments object alone. A tool without parameters (or
// with {}) gets {"type": "object", "properties": {}}, as vLLM gives it in the "required" schema;
// vLLM leaves a named choice of such a tool unconstrained, here it gets the same empty-object
// schema. parallel_tool_calls false adds "maxItems": 1 to the array (ours: vLLM does not).
//
// Validation (every refusal an ApiError 400 whose param names the field): `tools` an array of
// {"type": "function" (may be omitted, as vLLM allows), "function": {"name": a non-empty string,
// "description": a string, "parameters": an object schema, "strict": a bool}} with distinct
// names; parameters' own "type", where given, must be "object", "properties" an object of
// schemas, "required" an array of strings, "$defs" an object of schemas — the rest of the schema
// is the grammar engine's to judge when it compiles it. `tool_choice` "none", "auto",
// "required" or {"type": "function", "function": {"name": N}} with N among the tools; "required"
// and a named choice need tools; "auto" needs the server's --enable-auto-tool-choice (vLLM's
// message). Absent or null, tool_choice is "auto" when tools were given and "none" otherwise.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fg::server {

struct ToolDefinition {
  std::string name;
  std::string description;    // "" when absent
  nlohmann::json parameters;  // an object schema; null when absent
  bool strict = false;
};

// null (absent) gives no tools.
std::vector<ToolDefinition> read_tools(const nlohmann::json& tools);

enum class ToolChoiceMode { kNone, kAuto, kRequired, kNamed };

struct ToolChoice {
  ToolChoiceMode mode = ToolChoiceMode::kNone;
  std::string name;  // kNamed: the function
};

// `tool_choice` as the body holds it (null when absent). `auto_tool_choice_enabled`: the server
// runs with --enable-auto-tool-choice (and so a --tool-call-parser).
ToolChoice read_tool_choice(const nlohmann::json& tool_choice, const std::vector<ToolDefinition>& tools,
                            bool auto_tool_choice_enabled);

// The schema the output must satisfy for kRequired and kNamed; nullopt for kNone and kAuto.
std::optional<nlohmann::json> tool_choice_schema(const std::vector<ToolDefinition>& tools, const ToolChoice& choice,
                                                 bool parallel_tool_calls = true);

}  // namespace fg::server
