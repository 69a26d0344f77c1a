// engine/structured_output_json.h — a request's output constraint from JSON, in every spelling
// clients of OpenAI's and vLLM's servers send, read the same way for the server and for
// `generate --prompts` (read_request_fields reads it into RequestSpec::structured_output):
//
//   response_format: {"type": "text"} (none), {"type": "json_object"},
//                    {"type": "json_schema", "json_schema": {"name", "schema", "strict", "description"}}
//   structured_outputs (vLLM): {"json": schema (object or JSON text), "regex", "choice": [strings],
//                    "grammar": EBNF, "json_object": true, "disable_fallback" (no effect: there is
//                    no fallback)}
//   vLLM's older top-level fields: guided_json, guided_regex, guided_choice, guided_grammar
//                    (guided_decoding_backend is accepted and ignored).
//
// At most one constraint per request: two (in any spellings) are refused naming both. Options
// that would change what the constraint means and that fullgraph does not implement
// (whitespace patterns, structural tags, ...) are refused naming the field, never ignored. The
// constraint's own validity (does the schema or regex compile) is the grammar compiler's to say:
// the server compiles it before queueing the request (server/structured_output_request.h).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "grammar/structured_output.h"

namespace fg {

// The largest constraint text (a schema's JSON, a regex, a grammar) a request may carry: compiling
// runs before the request is queued, and its time grows with the text (bench/RESULTS.md).
inline constexpr size_t kMaxConstraintBytes = 64 << 10;

// The top-level field names read_structured_output() reads.
const std::vector<std::string_view>& structured_output_field_names();

// The constraint `body` carries, or none. StructuredOutput::source names the field it came from
// ("response_format.json_schema.schema", "structured_outputs.regex", "guided_choice", ...).
// Throws RequestFieldError (engine/request_json.h) naming the field.
std::optional<StructuredOutput> read_structured_output(const nlohmann::json& body);

}  // namespace fg
