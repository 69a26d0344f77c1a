// server/chat_output.cpp — see chat_output.h.
#include "server/chat_output.h"

namespace fg::server {

namespace {

ojson tool_calls_json(const std::vector<ToolCall>& calls) {
  ojson list = ojson::array();
  for (const ToolCall& c : calls)
    list.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  return list;
}

ToolCallOptions tool_options(const ChatOutputOptions& options) {
  ToolCallOptions o;
  o.function_name = options.function_name;
  return o;
}

}  // namespace

ojson chat_message(const std::string& text, const ChatOutputOptions& options, bool& tool_calls) {
  tool_calls = false;
  ojson message = {{"role", "assistant"}};
  std::optional<std::string> content = text;
  if (options.reasoning) {
    ReasoningSplit split = split_reasoning(*options.reasoning, text, options.thinking_enabled);
    message["reasoning_content"] = split.reasoning ? ojson(*split.reasoning) : ojson(nullptr);
    content = std::move(split.content);
  }
  if (options.tools && content) {
    ToolCallParse parse = parse_tool_calls(*options.tools, *content, tool_options(options));
    if (!parse.calls.empty()) {
      tool_calls = true;
      content = std::move(parse.content);
      message["content"] = content ? ojson(*content) : ojson(nullptr);
      message["tool_calls"] = tool_calls_json(parse.calls);
      return message;
    }
  }
  message["content"] = content ? ojson(*content) : ojson(nullptr);
  return message;
}

ChatDeltaStream::ChatDeltaStream(const ChatOutputOptions& options) {
  if (options.reasoning) reasoning_.emplace(*options.reasoning, options.thinking_enabled);
  if (options.tools) tools_.emplace(*options.tools, tool_options(options));
}

void ChatDeltaStream::add_tool_delta(ojson& delta, const ToolStreamDelta& d) {
  if (!d.content.empty()) delta["content"] = delta.value("content", std::string()) + d.content;
  for (const ToolCallDelta& call : d.tool_calls) {
    ojson piece = {{"index", call.index}};
    if (call.opens_call()) {
      piece["id"] = call.id;
      piece["type"] = "function";
      piece["function"] = {{"name", call.name}, {"arguments", call.arguments}};
    } else {
      piece["function"] = {{"arguments", call.arguments}};
    }
    if (!delta.contains("tool_calls")) delta["tool_calls"] = ojson::array();
    delta["tool_calls"].push_back(std::move(piece));
  }
}

ojson ChatDeltaStream::feed(std::string_view text, bool at_end) {
  ojson delta = ojson::object();
  std::string content;
  if (reasoning_) {
    ReasoningDelta d = reasoning_->feed(text);
    if (at_end) {
      const ReasoningDelta rest = reasoning_->finish();
      d.reasoning += rest.reasoning;
      d.content += rest.content;
    }
    if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
    content = std::move(d.content);
  } else {
    content = std::string(text);
  }
  if (!tools_) {
    if (!content.empty()) delta["content"] = content;
    return delta;
  }
  add_tool_delta(delta, tools_->feed(content));
  if (at_end) add_tool_delta(delta, tools_->finish());
  return delta;
}

}  // namespace fg::server
