// tokenizer/json_view.h — reading tokenizer.json defensively: a parser that refuses what would
// make later stages unsafe or ambiguous (deep nesting, duplicate keys, huge input), and a view
// that knows its JSON path, so that every refusal names the file and the exact field.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.h"

namespace fg {

inline constexpr size_t kMaxTokenizerJsonBytes = size_t{1} << 30;  // real files are tens of MiB
inline constexpr int kMaxTokenizerJsonDepth = 64;                   // real files nest about 6 deep

// Parses `text`; errors name `source`. Refuses nesting deeper than kMaxTokenizerJsonDepth
// (checked before parsing, so nothing recursive ever sees a deep document), duplicate object keys
// (nlohmann would silently keep the last one) and input over kMaxTokenizerJsonBytes.
nlohmann::json parse_tokenizer_json(std::string_view text, const std::string& source);

// A JSON value plus where it is: `source` (the file) and `path` (e.g. "normalizer.normalizers[1]").
class JsonView {
 public:
  JsonView(const nlohmann::json& value, const std::string& source, std::string path)
      : value_(&value), source_(&source), path_(std::move(path)) {}

  const nlohmann::json& raw() const { return *value_; }
  const std::string& path() const { return path_; }
  const std::string& source() const { return *source_; }
  bool is_null() const { return value_->is_null(); }

  // Object access. operator[] requires the key; get() returns nullopt when it is absent.
  JsonView operator[](std::string_view key) const;
  std::optional<JsonView> get(std::string_view key) const;
  // Refuses keys other than `allowed`, so that an option fullgraph does not know is never ignored.
  void allow_only(std::initializer_list<std::string_view> allowed) const;

  // Array access (the value must be an array).
  size_t size() const;
  JsonView item(size_t i) const;

  const std::string& as_string() const;
  bool as_bool() const;
  int64_t as_int() const;
  double as_double() const;
  void require_object() const;
  void require_array() const;

  // Raises fg::Error "SOURCE: PATH: message".
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    fail_message(fmt::format(format, std::forward<Args>(args)...));
  }
  [[noreturn]] void fail_message(const std::string& message) const;

  // "a string", "an object", ... for messages.
  std::string kind() const;

 private:
  const nlohmann::json* value_;
  const std::string* source_;
  std::string path_;
};

}  // namespace fg
