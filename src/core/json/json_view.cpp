// core/json/json_view.cpp — the path-aware view and its typed accessors (see json_view.h).
#include "core/json/json_view.h"

#include <cmath>

#include "core/json/strict_json.h"

namespace fg {

namespace {

constexpr int64_t kMinInt = std::numeric_limits<int64_t>::min();
constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();

// "a positive integer of at most 2147483647", "an integer in [-1, 7]", ... for messages.
std::string integer_range(int64_t lo, int64_t hi) {
  const std::string upper = hi == kMaxInt ? "" : fmt::format(" of at most {}", hi);
  if (lo == kMinInt && hi == kMaxInt) return "an integer";
  if (lo == 1) return "a positive integer" + upper;
  if (lo == 0) return "a non-negative integer" + upper;
  if (lo == kMinInt) return fmt::format("an integer of at most {}", hi);
  if (hi == kMaxInt) return fmt::format("an integer of at least {}", lo);
  return fmt::format("an integer in [{}, {}]", lo, hi);
}

}  // namespace

std::string JsonView::child_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

JsonView JsonView::operator[](std::string_view key) const {
  require_object();
  const auto it = value_->find(key);
  if (it == value_->end()) fail("the field \"{}\" is missing", key);
  return JsonView(*it, *source_, child_path(key));
}

std::optional<JsonView> JsonView::get(std::string_view key) const {
  require_object();
  const auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  return JsonView(*it, *source_, child_path(key));
}

std::optional<JsonView> JsonView::get_non_null(std::string_view key) const {
  std::optional<JsonView> found = get(key);
  if (found && found->is_null()) return std::nullopt;
  return found;
}

JsonView JsonView::required_non_null(std::string_view key) const {
  std::optional<JsonView> found = get_non_null(key);
  if (!found) throw Error(fmt::format("{}: {} is required but missing (or null)", *source_, child_path(key)));
  return *found;
}

JsonView JsonView::member(std::string_view key, const nlohmann::json& value) const {
  return JsonView(value, *source_, child_path(key));
}

void JsonView::allow_only(std::initializer_list<std::string_view> allowed) const {
  require_object();
  for (const auto& [key, value] : value_->items()) {
    bool known = false;
    for (std::string_view a : allowed) known = known || a == key;
    if (!known) member(key, value).fail("the option \"{}\" is not supported by fullgraph", key);
  }
}

size_t JsonView::size() const {
  require_array();
  return value_->size();
}

JsonView JsonView::item(size_t i) const {
  require_array();
  return JsonView((*value_)[i], *source_, fmt::format("{}[{}]", path_, i));
}

const std::string& JsonView::as_string() const {
  if (!value_->is_string()) fail_expected("a string");
  return value_->get_ref<const std::string&>();
}

bool JsonView::as_bool() const {
  if (!value_->is_boolean()) fail_expected("true or false");
  return value_->get<bool>();
}

int64_t JsonView::as_int(int64_t lo, int64_t hi) const {
  // nlohmann stores integers above INT64_MAX as unsigned; those never fit.
  const bool fits = value_->is_number_integer() &&
                    (!value_->is_number_unsigned() || value_->get<uint64_t>() <= static_cast<uint64_t>(kMaxInt));
  if (!fits || value_->get<int64_t>() < lo || value_->get<int64_t>() > hi) fail_expected(integer_range(lo, hi));
  return value_->get<int64_t>();
}

double JsonView::as_number() const {
  if (!value_->is_number()) fail_expected("a number");
  // JSON has no infinities, but nlohmann reads 1e999 as one.
  if (!std::isfinite(value_->get<double>())) fail_expected("a finite number");
  return value_->get<double>();
}

double JsonView::as_positive_number() const {
  const double number = as_number();
  if (number <= 0) fail_expected("positive");
  return number;
}

void JsonView::require_object() const {
  if (value_->is_object()) return;
  // Both phrasings: the config.json and tokenizer.json readers this replaced each worded this
  // refusal one way, and callers (and their tests) look for either.
  if (path_.empty())
    throw Error(fmt::format("{}: expected an object at the top level, found {} (the top level must be a JSON object)",
                            *source_, describe()));
  fail_expected("a JSON object");
}

void JsonView::require_array() const {
  if (!value_->is_array()) fail_expected("an array");
}

void JsonView::fail_message(const std::string& message) const {
  if (path_.empty()) throw Error(fmt::format("{}: {}", *source_, message));
  throw Error(fmt::format("{}: {}: {}", *source_, path_, message));
}

void JsonView::fail_expected(std::string_view expected) const {
  throw Error(fmt::format("{}: {} must be {}, found {}", *source_, path_.empty() ? "the top level" : path_, expected,
                          describe()));
}

std::string JsonView::describe() const {
  std::string text = clip_for_message(value_->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 80);
  switch (value_->type()) {
    case nlohmann::json::value_t::string: return "string " + text;
    case nlohmann::json::value_t::boolean: return "boolean " + text;
    case nlohmann::json::value_t::array: return "array " + text;
    case nlohmann::json::value_t::object: return "object " + text;
    default: return text;  // numbers and null read unambiguously
  }
}

}  // namespace fg
