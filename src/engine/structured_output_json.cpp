// engine/structured_output_json.cpp — see structured_output_json.h.
#include "engine/structured_output_json.h"

#include <fmt/format.h>

#include <initializer_list>
#include <string>

#include "core/json/strict_json.h"
#include "engine/request_json.h"

namespace fg {

namespace {

using nlohmann::json;
using K = StructuredOutputKind;

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw RequestFieldError(param, fmt::format("'{}': {}", param, message));
}

std::string clipped(std::string_view text) { return clip_for_message(text, 80); }

const std::string& string_of(const json& v, const std::string& param) {
  if (!v.is_string()) bad(param, fmt::format("expected a string, got {}", v.type_name()));
  return v.get_ref<const std::string&>();
}

bool bool_of(const json& v, const std::string& param) {
  if (!v.is_boolean()) bad(param, fmt::format("expected true or false, got {}", v.type_name()));
  return v.get<bool>();
}

const json& object_of(const json& v, const std::string& param) {
  if (!v.is_object()) bad(param, fmt::format("expected an object, got {}", v.type_name()));
  return v;
}

// A JSON schema: an object, or its JSON text (vLLM takes both for json and guided_json).
StructuredOutput schema_of(const json& v, const std::string& param) {
  if (v.is_string()) return {K::kJsonSchema, v.get<std::string>(), param};
  if (!v.is_object()) bad(param, fmt::format("expected a JSON schema (an object), got {}", v.type_name()));
  return {K::kJsonSchema, v.dump(), param};
}

StructuredOutput choice_of(const json& v, const std::string& param) {
  if (!v.is_array() || v.empty()) bad(param, "expected a non-empty list of strings");
  for (size_t i = 0; i < v.size(); ++i)
    if (!v[i].is_string()) bad(param, fmt::format("item {} is {}, not a string", i, v[i].type_name()));
  return {K::kChoice, v.dump(), param};
}

// response_format: OpenAI's.
std::optional<StructuredOutput> read_response_format(const json& v) {
  const std::string p = "response_format";
  object_of(v, p);
  auto type_it = v.find("type");
  if (type_it == v.end() || !type_it->is_string())
    bad(p, "expected {\"type\": \"text\" | \"json_object\" | \"json_schema\", ...}");
  const std::string& type = type_it->get_ref<const std::string&>();
  auto only = [&](std::initializer_list<std::string_view> keys) {
    for (const auto& [key, value] : v.items()) {
      if (value.is_null()) continue;
      bool known = false;
      for (std::string_view k : keys) known = known || key == k;
      if (!known) bad(p + "." + clipped(key), fmt::format("not supported with \"type\": \"{}\"", clipped(type)));
    }
  };
  if (type == "text") {
    only({"type"});
    return std::nullopt;
  }
  if (type == "json_object") {
    only({"type"});
    return StructuredOutput{K::kJsonObject, "", p};
  }
  if (type == "json_schema") {
    only({"type", "json_schema"});
    const std::string q = p + ".json_schema";
    auto it = v.find("json_schema");
    if (it == v.end() || it->is_null()) bad(q, "is required with \"type\": \"json_schema\"");
    object_of(*it, q);
    std::optional<StructuredOutput> out;
    for (const auto& [key, value] : it->items()) {
      if (value.is_null()) continue;
      if (key == "name" || key == "description")
        string_of(value, q + "." + key);
      else if (key == "strict")
        bool_of(value, q + ".strict");  // the output always follows the schema strictly
      else if (key == "schema")
        out = schema_of(value, q + ".schema");
      else
        bad(q + "." + clipped(key), "not supported");
    }
    if (!out) bad(q + ".schema", "is required: the JSON schema the output must follow");
    return out;
  }
  if (type == "structural_tag") bad(p, "\"type\": \"structural_tag\" is not supported");
  bad(p + ".type", fmt::format("unknown type \"{}\" (expected \"text\", \"json_object\" or \"json_schema\")",
                               clipped(type)));
}

// structured_outputs: vLLM's, one constraint among its keys.
std::vector<StructuredOutput> read_structured_outputs(const json& v) {
  const std::string p = "structured_outputs";
  object_of(v, p);
  std::vector<StructuredOutput> out;
  bool any_whitespace = true;
  for (const auto& [key, value] : v.items()) {
    if (value.is_null()) continue;
    const std::string q = p + "." + key;
    if (key == "disable_any_whitespace")
      any_whitespace = !bool_of(value, q);
    else if (key == "json")
      out.push_back(schema_of(value, q));
    else if (key == "regex")
      out.push_back({K::kRegex, string_of(value, q), q});
    else if (key == "choice")
      out.push_back(choice_of(value, q));
    else if (key == "grammar")
      out.push_back({K::kGrammar, string_of(value, q), q});
    else if (key == "json_object") {
      if (bool_of(value, q)) out.push_back({K::kJsonObject, "", q});
    } else if (key == "disable_fallback")
      bool_of(value, q);  // there is one grammar engine, and nothing to fall back to
    else
      bad(p + "." + clipped(key), "not supported");
  }
  for (StructuredOutput& c : out) c.any_whitespace = any_whitespace;
  return out;
}

}  // namespace

const std::vector<std::string_view>& structured_output_field_names() {
  static const std::vector<std::string_view> names = {
      "response_format", "structured_outputs", "guided_json", "guided_regex", "guided_choice", "guided_grammar",
      "guided_decoding_backend", "guided_whitespace_pattern"};
  return names;
}

std::optional<StructuredOutput> read_structured_output(const json& body) {
  std::vector<StructuredOutput> found;
  auto get = [&](const char* name) -> const json* {
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
  };
  if (const json* v = get("response_format"))
    if (auto c = read_response_format(*v)) found.push_back(std::move(*c));
  if (const json* v = get("structured_outputs"))
    for (StructuredOutput& c : read_structured_outputs(*v)) found.push_back(std::move(c));
  if (const json* v = get("guided_json")) found.push_back(schema_of(*v, "guided_json"));
  if (const json* v = get("guided_regex")) found.push_back({K::kRegex, string_of(*v, "guided_regex"), "guided_regex"});
  if (const json* v = get("guided_choice")) found.push_back(choice_of(*v, "guided_choice"));
  if (const json* v = get("guided_grammar"))
    found.push_back({K::kGrammar, string_of(*v, "guided_grammar"), "guided_grammar"});
  if (const json* v = get("guided_decoding_backend")) string_of(*v, "guided_decoding_backend");  // one backend here
  if (const json* v = get("guided_whitespace_pattern")) {
    string_of(*v, "guided_whitespace_pattern");
    bad("guided_whitespace_pattern", "not supported (JSON output allows any whitespace between tokens)");
  }
  if (found.size() > 1)
    bad(found[1].source, fmt::format("a request takes one output constraint, and both '{}' and '{}' give one",
                                     found[0].source, found[1].source));
  if (found.empty()) return std::nullopt;
  if (found.front().text.size() > kMaxConstraintBytes)
    bad(found.front().source, fmt::format("the constraint is {} bytes; at most {} are compiled (the compile time grows "
                                          "with it: a 17 KB schema takes seconds)",
                                          found.front().text.size(), kMaxConstraintBytes));
  return std::move(found.front());
}

}  // namespace fg
