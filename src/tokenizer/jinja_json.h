// tokenizer/jinja_json.h — JSON into template values and back out, the way Python does it.
//
// Messages and tools arrive as JSON and become dicts and lists with their key order kept
// (Python's json.loads keeps it too). The `tojson` filter must reproduce Python's
// json.dumps byte for byte, as transformers calls it: ensure_ascii=False by default, ", " and
// ": " separators (or "," and ": " once an indent is given), floats printed with repr(),
// NaN/Infinity allowed, non-string keys converted like Python converts them.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tokenizer/jinja_value.h"

namespace fg::jinja {

struct JsonStyle {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // absent: everything on one line
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};

void write_json(std::string& out, const Value& v, const JsonStyle& style, Meter& meter);
Value value_from_json(const nlohmann::ordered_json& j);
Value value_from_json(const nlohmann::json& j);

}  // namespace fg::jinja
