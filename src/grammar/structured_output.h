// grammar/structured_output.h — what a request asks its output to match: one constraint, as the
// request surface read it (server/structured_output_request.h, engine/structured_output_json.h)
// and as the grammar compiler takes it (grammar_compiler.h). A plain value: (kind, text,
// any_whitespace) is the whole constraint, and the compiler's cache key.
#pragma once

#include <string>
#include <string_view>

namespace fg {

enum class StructuredOutputKind {
  kJsonObject,  // any JSON object (OpenAI's {"type": "json_object"}); `text` is empty
  kJsonSchema,  // a JSON document valid against the schema in `text` (its JSON text)
  kRegex,       // text matching the regular expression in `text` (whole-match)
  kChoice,      // exactly one of a list of strings; `text` is the list as a JSON array of strings
  kGrammar,     // text in the language of the EBNF grammar in `text` (xgrammar's GBNF, root rule "root")
};

struct StructuredOutput {
  StructuredOutputKind kind = StructuredOutputKind::kJsonObject;
  std::string text;
  // The request field it came from ("response_format.json_schema.schema", "guided_regex", ...), so
  // that a constraint that does not compile can be refused naming it. Not part of the constraint.
  std::string source;

  // JSON kinds: any whitespace between tokens (vLLM's default); false: none beyond JSON's ", " and
  // ": " separators (vLLM's structured_outputs.disable_any_whitespace). Part of the constraint.
  bool any_whitespace = true;

  bool operator==(const StructuredOutput& other) const {
    return kind == other.kind && text == other.text && any_whitespace == other.any_whitespace;
  }
};

// "json_object", "json_schema", "regex", "choice", "grammar".
std::string_view kind_name(StructuredOutputKind kind);

}  // namespace fg
