// server/tool_call_json.h — reads one tool call's JSON object from the text a model has written so
// far, complete or not, for the tool-call parsers (tool_call_parser.h): the function's name once
// its string is whole, and the arguments in their canonical serialization, as far as the JSON
// read so far fixes them.
//
// The canonical arguments text is the arguments object written again from nlohmann's SAX events,
// in the model's key order, as Python's json.dumps(args, ensure_ascii=False) spells it (", " and
// ": " separators, UTF-8 kept; numbers as nlohmann writes them). Each event's text depends only on
// the events before it, so the text for a prefix of the output is a prefix of the text for the
// whole output: a stream can send it piece by piece and the pieces join to exactly what the
// non-streamed parse returns. A number at the very end of the text is left out until a byte after
// it shows that it is whole ("12" may become "123").
//
// nlohmann parses (no JSON parser of ours); its SAX interface reports no positions, so an
// iterator counting the bytes the lexer reads says where the object ended, as in core/json.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace fg::server {

enum class CallShape {
  kCall,       // {"name": "...", "arguments" | "parameters": {...}} (other keys are ignored)
  kArguments,  // the arguments object alone (a call whose name the request fixed)
};

struct CallScan {
  enum class State { kIncomplete, kComplete, kMalformed };
  State state = State::kIncomplete;
  size_t end = 0;                   // kComplete: bytes the object took, through its closing '}'
  std::optional<std::string> name;  // kCall: the name, once its string is whole
  bool arguments_started = false;   // the arguments object has opened
  std::string arguments;            // canonical text of the arguments read so far
  std::string error;                // kMalformed: why (for logs)
};

// `text` starts with the object's '{' and may go on past its end. kIncomplete: more text may
// complete it. kMalformed: no continuation can (not JSON; for kCall, a name that is not a
// string, arguments that are not an object, both "arguments" and "parameters", or, once the
// object has closed, no name or no arguments).
CallScan scan_call(std::string_view text, CallShape shape);

}  // namespace fg::server
