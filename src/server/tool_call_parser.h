// server/tool_call_parser.h — turns what a model wrote into OpenAI tool calls, for a whole text
// and for a stream of text deltas: `--tool-call-parser llama3_json | hermes` (vLLM's names) for
// tool_choice "auto", and the two JSON shapes vLLM constrains tool_choice "required" and a named
// choice to (tool_schema.h builds their schemas).
//
// Formats, and the rules followed (vLLM's vllm/entrypoints/openai/tool_parsers/llama_tool_parser.py,
// hermes_tool_parser.py, and serving_chat's handling of required and named choices):
// - llama3_json (Llama 3.1/3.2/3.3): the output, after optional whitespace and an optional
//   <|python_tag|>, is one or more objects {"name": N, "parameters" | "arguments": {...}}
//   separated by ';' (a trailing ';' is allowed). content is null when calls were found.
// - hermes (Qwen2.5, Qwen3, Hermes): <tool_call>{"name": N, "arguments": {...}}</tool_call>
//   blocks; the text before the first block is content (null when empty); text between and after
//   blocks is dropped, as vLLM drops it. The last block may lack its </tool_call> (a stop string
//   or EOS cut it). Either of "arguments" and "parameters" is read in both formats.
// - required: the JSON array [{"name": N, "parameters": {...}}, ...] of vLLM's tool_choice
//   "required" schema; content is null.
// - named: the output is the arguments object of the function the request named; content null.
// A text that does not parse as calls in its format, whole, is all content and has no calls
// (vLLM: "just treat the tool call as regular JSON"). Every call's id is "chatcmpl-tool-" and 32
// hex digits (vLLM's make_tool_call_id), its type "function", and its arguments the canonical
// serialization of tool_call_json.h (what vLLM's json.dumps(args, ensure_ascii=False) gives).
//
// Where we differ from vLLM, and why: llama3_json's non-streamed path in vLLM finds JSON anywhere
// in the text (by a regex that misses objects nested three deep) and drops the text around it,
// while its stream treats such text as content; here the calls must start the output, in both
// paths. vLLM streams arguments by diffing partial-JSON guesses, which is where its streamed
// arguments stop matching its non-streamed ones; here both paths come from one serialization.
//
// Streaming: ToolCallStream emits, per call, first a delta {index, id, name} (arguments empty),
// then argument pieces (index only) that join to exactly the non-streamed arguments. A call's
// name is sent once its name string is whole and its arguments object has opened; until then the
// text is held back, and if it turns out not to be a call it is sent as content, so for every
// text the streamed content joins to the non-streamed content, and the calls match, unless the
// text breaks after a call was sent (a truncated or malformed later part): a stream cannot take
// back a call, so it keeps the calls it sent and sends the raw text from the broken call on as
// content, where the non-streamed parse gives all of the text as content.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fg::server {

enum class ToolCallFormat { kLlama3Json, kHermes, kRequired, kNamed };

// The names `--tool-call-parser` takes (the auto formats), in the order the help lists them.
std::span<const std::string_view> tool_call_parser_names();
std::optional<ToolCallFormat> tool_call_parser_from_name(std::string_view name);

// "chatcmpl-tool-" and 32 random hex digits.
std::string make_tool_call_id();

struct ToolCallOptions {
  std::string function_name;                                 // kNamed: the function tool_choice named
  std::function<std::string()> make_id = make_tool_call_id;  // tests fix the ids
};

struct ToolCall {  // type "function"
  std::string id;
  std::string name;
  std::string arguments;  // a JSON object, as text
};

struct ToolCallParse {
  std::optional<std::string> content;
  std::vector<ToolCall> calls;  // non-empty: finish_reason "tool_calls"
};

ToolCallParse parse_tool_calls(ToolCallFormat format, std::string_view text, const ToolCallOptions& options = {});

// One piece of a streamed call, as OpenAI's delta.tool_calls[i] carries it. The first piece of
// each call has the id and name (and type "function"; arguments ""); the later ones only index
// and arguments.
struct ToolCallDelta {
  int index = 0;
  std::string id;    // empty after the first piece
  std::string name;  // empty after the first piece
  std::string arguments;
  bool opens_call() const { return !id.empty(); }
};

struct ToolStreamDelta {
  std::string content;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return content.empty() && tool_calls.empty(); }
};

class ToolCallStream {
 public:
  explicit ToolCallStream(ToolCallFormat format, ToolCallOptions options = {});

  ToolStreamDelta feed(std::string_view text);
  ToolStreamDelta finish();  // once, at the end of the generation

  // Calls whose first piece was sent: non-zero at the end means finish_reason "tool_calls".
  int calls_sent() const { return calls_sent_; }
  // The text stopped parsing as calls; from there on it went out as content.
  bool failed() const { return failed_; }

 private:
  enum class State {
    kLead,         // before the calls: whitespace, <|python_tag|>, '[' (by format)
    kContent,      // hermes: content before the first <tool_call>
    kBlockLead,    // hermes: after <tool_call>, before '{'
    kCall,         // inside a call's object
    kAfterCall,    // after a call's '}'
    kBetween,      // after a separator (';' ',') or a </tool_call>
    kDone,         // required: after ']'; named: after the object
    kPassThrough,  // not calls: everything is content
  };

  void advance(ToolStreamDelta& out, bool at_end);
  // Advances once from pos_; false when it needs more text.
  bool step(ToolStreamDelta& out, bool at_end);
  // kCall: scans the call's text and sends what it fixes; as step().
  bool scan(ToolStreamDelta& out, bool at_end);
  void fail();
  // A call's object opens at text[at] ('{'), or the text is not calls (fail()). As step().
  bool open_call(std::string_view text, size_t at);

  ToolCallFormat format_;
  ToolCallOptions options_;
  State state_;
  std::string text_;         // everything fed so far
  size_t pos_ = 0;           // where parsing stands in text_
  size_t unsent_from_ = 0;   // text_ before this was sent as content or taken by a finished call
  size_t call_start_ = 0;    // kCall: where the call's '{' is
  size_t scanned_size_ = 0;  // kCall: text_ size at the last scan
  int calls_sent_ = 0;
  bool failed_ = false;
  bool call_open_sent_ = false;  // the current call's first piece is out
  size_t arguments_sent_ = 0;    // bytes of the current call's arguments sent
};

}  // namespace fg::server
