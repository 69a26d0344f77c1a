// server/chat_output.h — what a chat answer's text becomes in OpenAI's message shape: with a
// reasoning parser (--reasoning-parser), the text before </think> is "reasoning_content"; with
// tools in play (tool_choice auto with --tool-call-parser, "required", or a named function), calls
// in the rest become "tool_calls" and the finish reason "tool_calls". Whole answers
// (chat_message) and streams (ChatDeltaStream: deltas of content, reasoning_content and
// tool_calls, vLLM's streamed shapes: each call's id, type and name first, then its arguments in
// pieces that join to exactly the whole answer's arguments).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "server/reasoning_parser.h"
#include "server/tool_call_parser.h"

namespace fg::server {

using ojson = nlohmann::ordered_json;

struct ChatOutputOptions {
  std::optional<ReasoningParserKind> reasoning;  // --reasoning-parser
  bool thinking_enabled = true;                  // chat_template_kwargs.enable_thinking
  std::optional<ToolCallFormat> tools;           // how the content is read as calls; none: plain text
  std::string function_name;                     // ToolCallFormat::kNamed: the function tool_choice named

  bool plain() const { return !reasoning && !tools; }
};

// The assistant message of one choice's whole text; `tool_calls` is set when calls were found.
ojson chat_message(const std::string& text, const ChatOutputOptions& options, bool& tool_calls);

// One choice's stream: text deltas in, message deltas out.
class ChatDeltaStream {
 public:
  explicit ChatDeltaStream(const ChatOutputOptions& options);

  // The delta of this text ({} when it carries nothing yet: text held back as a possible tag or
  // call); `at_end`: the choice's last text, after which everything held is sent.
  ojson feed(std::string_view text, bool at_end);
  // Calls were sent: the choice finishes with "tool_calls".
  bool sent_tool_calls() const { return tools_ && tools_->calls_sent() > 0; }

 private:
  // Appends a tool stream's content and call pieces to `delta`.
  static void add_tool_delta(ojson& delta, const ToolStreamDelta& d);

  std::optional<ReasoningStream> reasoning_;
  std::optional<ToolCallStream> tools_;
};

}  // namespace fg::server
