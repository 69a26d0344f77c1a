// tokenizer/json_view.cpp — the guarded tokenizer.json parser and the path-aware view.
#include "tokenizer/json_view.h"

#include <unordered_set>
#include <vector>

namespace fg {

namespace {

// Nesting depth of the bracket structure, ignoring brackets inside strings. Runs before the real
// parser so that no recursive code (nlohmann's destructor included) ever meets a deep document.
void check_depth(std::string_view text, const std::string& source) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxTokenizerJsonDepth)
        fail("{}: JSON nests deeper than {} levels (at byte {})", source, kMaxTokenizerJsonDepth, i);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

}  // namespace

namespace {

// Names a key that some object of `text` repeats (the slow path, run only once one is known to).
std::string find_duplicate_key(std::string_view text) {
  std::vector<std::unordered_set<std::string>> open_objects;  // keys seen so far, per open object
  std::string duplicate;
  const auto callback = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) {
      open_objects.emplace_back();
    } else if (event == E::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (event == E::key && !open_objects.empty()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second && duplicate.empty()) duplicate = key;
    }
    return true;
  };
  const nlohmann::json reparsed = nlohmann::json::parse(text.begin(), text.end(), callback);
  (void)reparsed;
  return duplicate;
}

}  // namespace

nlohmann::json parse_tokenizer_json(std::string_view text, const std::string& source) {
  FG_CHECK(text.size() <= kMaxTokenizerJsonBytes, "{}: {} bytes is larger than the {} bytes a tokenizer.json may have",
           source, text.size(), kMaxTokenizerJsonBytes);
  check_depth(text, source);
  // nlohmann keeps the last of repeated keys; count the keys of each object instead, and compare
  // with the size of the object built (cheaper than remembering every key of a 150k-entry vocab).
  std::vector<size_t> key_counts;  // per open object
  bool repeated = false;
  const auto callback = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) {
      key_counts.push_back(0);
    } else if (event == E::key) {
      if (!key_counts.empty()) ++key_counts.back();
    } else if (event == E::object_end && !key_counts.empty()) {
      repeated = repeated || key_counts.back() != parsed.size();
      key_counts.pop_back();
    }
    return true;
  };
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.begin(), text.end(), callback);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON: {}", source, e.what());
  }
  if (repeated) fail("{}: an object has the key \"{}\" twice", source, find_duplicate_key(text));
  return doc;
}

JsonView JsonView::operator[](std::string_view key) const {
  require_object();
  const auto it = value_->find(key);
  if (it == value_->end()) fail("the field \"{}\" is missing", key);
  return JsonView(*it, *source_, path_.empty() ? std::string(key) : path_ + "." + std::string(key));
}

std::optional<JsonView> JsonView::get(std::string_view key) const {
  require_object();
  const auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  return JsonView(*it, *source_, path_.empty() ? std::string(key) : path_ + "." + std::string(key));
}

void JsonView::allow_only(std::initializer_list<std::string_view> allowed) const {
  require_object();
  for (const auto& [key, value] : value_->items()) {
    bool known = false;
    for (std::string_view a : allowed) known = known || a == key;
    if (!known) {
      const std::string where = path_.empty() ? key : path_ + "." + key;
      throw Error(fmt::format("{}: {}: the option \"{}\" is not supported by fullgraph", *source_, where, key));
    }
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
  if (!value_->is_string()) fail("expected a string, found {}", kind());
  return value_->get_ref<const std::string&>();
}

bool JsonView::as_bool() const {
  if (!value_->is_boolean()) fail("expected true or false, found {}", kind());
  return value_->get<bool>();
}

int64_t JsonView::as_int() const {
  if (value_->is_number_unsigned()) {
    const uint64_t v = value_->get<uint64_t>();
    if (v > static_cast<uint64_t>(INT64_MAX)) fail("the integer {} is out of range", v);
    return static_cast<int64_t>(v);
  }
  if (!value_->is_number_integer()) fail("expected an integer, found {}", kind());
  return value_->get<int64_t>();
}

double JsonView::as_double() const {
  if (!value_->is_number()) fail("expected a number, found {}", kind());
  return value_->get<double>();
}

void JsonView::require_object() const {
  if (!value_->is_object()) fail("expected an object, found {}", kind());
}

void JsonView::require_array() const {
  if (!value_->is_array()) fail("expected an array, found {}", kind());
}

void JsonView::fail_message(const std::string& message) const {
  if (path_.empty()) throw Error(fmt::format("{}: {}", *source_, message));
  throw Error(fmt::format("{}: {}: {}", *source_, path_, message));
}

std::string JsonView::kind() const {
  switch (value_->type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: {
      std::string_view text = value_->get_ref<const std::string&>();
      if (text.size() <= 60) return fmt::format("the string \"{}\"", text);
      size_t cut = 60;
      while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // keep UTF-8 whole
      return fmt::format("the string \"{}...\"", text.substr(0, cut));
    }
    case nlohmann::json::value_t::boolean: return value_->get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::number_float: return fmt::format("the number {}", value_->get<double>());
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return fmt::format("the number {}", value_->dump());
    default: return "an unsupported JSON value";
  }
}

}  // namespace fg
