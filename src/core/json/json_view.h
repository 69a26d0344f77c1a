// core/json/json_view.h — a JSON value that knows where it is: the source it came from and its
// path inside it (e.g. "normalizer.normalizers[1]", "rope_scaling.factor"), with typed accessors
// that refuse anything else, so that every refusal names the file and the exact field.
//
// Messages: a value of the wrong type or range reads "SOURCE: PATH must be EXPECTED, found
// VALUE" (PATH is "the top level" for the root); everything else, fail() included, reads
// "SOURCE: PATH: message".
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.h"

namespace fg {

class JsonView {
 public:
  // `source` must outlive the view (JsonDocument owns one).
  JsonView(const nlohmann::json& value, const std::string& source, std::string path)
      : value_(&value), source_(&source), path_(std::move(path)) {}

  const nlohmann::json& raw() const { return *value_; }
  const std::string& path() const { return path_; }
  const std::string& source() const { return *source_; }
  bool is_null() const { return value_->is_null(); }

  // Object access (the value must be an object). operator[] requires the key, whose value may be
  // null; get() returns nullopt when the key is absent.
  JsonView operator[](std::string_view key) const;
  std::optional<JsonView> get(std::string_view key) const;
  // Hugging Face configs write null for "use the default": these treat null as absent.
  std::optional<JsonView> get_non_null(std::string_view key) const;
  JsonView required_non_null(std::string_view key) const;
  // The view of one member of this object met while iterating raw().items().
  JsonView member(std::string_view key, const nlohmann::json& value) const;
  // Refuses keys other than `allowed`, so that an option fullgraph does not know is never ignored.
  void allow_only(std::initializer_list<std::string_view> allowed) const;

  // Array access (the value must be an array).
  size_t size() const;
  JsonView item(size_t i) const;

  const std::string& as_string() const;
  bool as_bool() const;
  // An integer in [lo, hi]; 64.0 is refused like 64.5 (Python writes integers as integers).
  int64_t as_int(int64_t lo = std::numeric_limits<int64_t>::min(),
                 int64_t hi = std::numeric_limits<int64_t>::max()) const;
  double as_number() const;           // finite
  double as_positive_number() const;  // finite and > 0
  void require_object() const;
  void require_array() const;

  // Raises fg::Error "SOURCE: PATH: message" ("SOURCE: message" at the root).
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    fail_message(fmt::format(format, std::forward<Args>(args)...));
  }
  [[noreturn]] void fail_message(const std::string& message) const;
  // Raises "SOURCE: PATH must be EXPECTED, found VALUE".
  [[noreturn]] void fail_expected(std::string_view expected) const;

  // The value for messages: its JSON text, shortened, tagged with its type where the text alone
  // would hide it ("string \"64\"" against 64, "boolean true", "array [1,2]").
  std::string describe() const;

 private:
  std::string child_path(std::string_view key) const;

  const nlohmann::json* value_;
  const std::string* source_;
  std::string path_;
};

}  // namespace fg
