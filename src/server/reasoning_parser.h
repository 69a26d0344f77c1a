// server/reasoning_parser.h — `--reasoning-parser qwen3 | deepseek_r1` (vLLM's names): splits what
// a reasoning model writes into `reasoning_content` (between <think> and </think>) and `content`
// (after </think>), for a whole text and for a stream of text deltas.
//
// The rules are vLLM's (vllm/reasoning/basic_parsers.py, deepseek_r1_reasoning_parser.py,
// qwen3_reasoning_parser.py):
// - The output may open with <think> (the model wrote it) or not (the chat template put it at the
//   end of the prompt: DeepSeek-R1's later templates, Qwen3-2507 and Qwen3.5). Either way the text
//   up to the first </think> is reasoning and the text after it is content, verbatim (the newlines
//   after </think> stay in the content, as vLLM leaves them).
// - deepseek_r1: no </think> in the output means the generation stopped while thinking: all of it
//   is reasoning. reasoning is a string even when empty; content is null when empty.
// - qwen3 with thinking on (the default, or chat_template_kwargs {"enable_thinking": true}): the
//   same split; reasoning and content are each null when empty.
// - qwen3 with {"enable_thinking": false}: Qwen3's template closes an empty <think></think> in the
//   prompt, so the reasoning has ended before the first output byte; all of the output is content
//   (vLLM's serving layer routes it so through prompt_is_reasoning_end), and reasoning is null.
//
// Where we differ from vLLM, and why: vLLM's non-streamed path drops the text before the first
// <think> wherever it stands, while its streamed path keeps it; a stream cannot hold its output
// until it knows whether a <think> comes later, so here a <think> opens the reasoning only at the
// start of the output (after whitespace, which it drops). One state machine serves both paths, so
// the streamed pieces always concatenate to the non-streamed split. vLLM's token-id checks (a tag
// is one token in these vocabularies) become text checks here: a tag split across deltas at any
// byte is held back until it is whole or ruled out. Qwen3-Coder's implicit end of reasoning at
// "<tool_call><function=" belongs to the XML tool format, which fullgraph does not parse.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace fg::server {

enum class ReasoningParserKind { kQwen3, kDeepSeekR1 };

// The names `--reasoning-parser` takes, in the order the help lists them.
std::span<const std::string_view> reasoning_parser_names();
std::optional<ReasoningParserKind> reasoning_parser_from_name(std::string_view name);
std::string_view reasoning_parser_name(ReasoningParserKind kind);

// What the chat message carries: null stands for an absent field (see the rules above).
struct ReasoningSplit {
  std::optional<std::string> reasoning;
  std::optional<std::string> content;
};

// `thinking_enabled` is chat_template_kwargs' enable_thinking (default true); only qwen3 reads it.
ReasoningSplit split_reasoning(ReasoningParserKind kind, std::string_view text, bool thinking_enabled = true);

// One step of a stream: the text each channel gained (either may be empty).
struct ReasoningDelta {
  std::string reasoning;
  std::string content;
  bool empty() const { return reasoning.empty() && content.empty(); }
};

// The streamed split. Feed each text delta as it is detokenized, then call finish() once at the
// end of the generation (it releases the bytes held back as a possible tag prefix). The pieces
// joined equal split_reasoning()'s strings (null read as empty), however the text was cut.
class ReasoningStream {
 public:
  explicit ReasoningStream(ReasoningParserKind kind, bool thinking_enabled = true);

  ReasoningDelta feed(std::string_view text);
  ReasoningDelta finish();

  // True once the whole </think> has been fed (from the start for qwen3 without thinking). A
  // grammar constraint starts with the token after the one that completed the tag; any text that
  // token carried past the tag is content the constraint did not see.
  bool reasoning_ended() const { return state_ == State::kContent; }

 private:
  enum class State { kOpening, kReasoning, kContent };

  void advance(ReasoningDelta& out, bool at_end);

  State state_;
  std::string held_;  // bytes not yet given to a channel: a possible tag, or leading whitespace
};

}  // namespace fg::server
