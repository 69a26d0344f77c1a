// core/json/strict_json.cpp — the strict parser: a SAX handler that builds nlohmann's DOM the way
// nlohmann's own DOM parser does, but refuses duplicate keys and deep nesting as it goes, and
// knows the byte offset of what it refuses (see strict_json.h).
//
// nlohmann's SAX parser is iterative and its SAX interface reports no position outside parse
// errors; the input iterator below counts what the lexer has read, which is exactly what is
// needed: when a key or a container start is reported, the lexer has read up to its last byte
// and no further (only numbers look one byte ahead).
#include "core/json/strict_json.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "core/json/counting_iterator.h"
#include "core/utf8.h"

namespace fg {

namespace {

using nlohmann::json;

// "file: not valid JSON" or "file: header is not valid JSON".
std::string not_valid(const JsonSource& source) {
  return source.part.empty() ? source.file + ": not valid JSON"
                             : fmt::format("{}: {} is not valid JSON", source.file, source.part);
}

class StrictDomBuilder : public nlohmann::json_sax<json> {
 public:
  StrictDomBuilder(std::string_view text, const size_t& read, const JsonSource& source, const JsonLimits& limits)
      : text_(text), read_(read), source_(source), limits_(limits) {}

  json root;
  std::vector<std::string> top_level_keys;
  std::string error;  // why a callback refused, when one did

  bool null() override { return put(nullptr); }
  bool boolean(bool value) override { return put(value); }
  bool number_integer(number_integer_t value) override { return put(value); }
  bool number_unsigned(number_unsigned_t value) override { return put(value); }
  bool number_float(number_float_t value, const string_t&) override { return put(value); }
  bool string(string_t& value) override { return put(std::move(value)); }
  bool binary(binary_t&) override {  // JSON text cannot hold one; only the binary formats can
    error = fmt::format("{}: holds a binary value", source_.name());
    return false;
  }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t& name) override {
    auto& object = stack_.back().value->get_ref<json::object_t&>();
    // try_emplace leaves `name` alone when the key exists, so the message can still quote it.
    auto [it, inserted] = object.try_emplace(std::move(name));
    if (!inserted) {
      const std::string where = stack_.size() == 1 ? "at the top level" : fmt::format("inside '{}'", path());
      const std::string key = clip_for_message(name);
      error = fmt::format("{}: duplicate key '{}' {} (offset {}): the object has \"{}\" twice", source_.name(), key,
                          where, key_offset(), key);
      return false;
    }
    if (stack_.size() == 1) top_level_keys.push_back(it->first);
    slot_ = &it->second;
    slot_key_ = &it->first;
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    // nlohmann says "[json.exception.parse_error.101] parse error at line 3, column 7: why"; keep
    // the why, and say where in our own words (its position counts the byte it stopped at).
    std::string_view why = ex.what();
    if (const size_t at = why.find("parse error"); at != why.npos) {
      if (const size_t colon = why.find(": ", at); colon != why.npos) why.remove_prefix(colon + 2);
    }
    const size_t offset = std::min(position == 0 ? 0 : position - 1, text_.size());
    size_t line = 1, line_start = 0;
    for (size_t i = 0; i < offset; ++i) {
      if (text_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    const size_t column = offset - line_start + 1;
    error = fmt::format("{}: malformed JSON at offset {} (line {}, column {}): {}", not_valid(source_), offset, line,
                        column, clip_for_message(why, 300));
    return false;
  }

 private:
  struct Level {
    json* value;
    const std::string* key;  // where this container sits in its parent: the key, in an object
    size_t index;            // or the index, in an array
  };

  // The path of the innermost open container, for messages ("weight_map", "model.merges[3]").
  std::string path() const {
    std::string out;
    for (size_t i = 1; i < stack_.size(); ++i) {
      if (stack_[i - 1].value->is_array())
        out += fmt::format("[{}]", stack_[i].index);
      else
        out += (out.empty() ? "" : ".") + *stack_[i].key;
    }
    return clip_for_message(out);
  }

  // The offset of the opening quote of the key just read: the lexer stopped on its closing quote.
  size_t key_offset() const {
    size_t at = std::min(read_, text_.size()) - 1;
    while (at > 0) {
      --at;
      if (text_[at] != '"') continue;
      size_t backslashes = 0;
      while (at > backslashes && text_[at - 1 - backslashes] == '\\') ++backslashes;
      if (backslashes % 2 == 0) return at;
    }
    return at;
  }

  // Stores `value` where the parser is, and returns where it now lives.
  json* store(json&& value, Level& level) {
    level.key = nullptr;
    level.index = 0;
    if (stack_.empty()) {
      root = std::move(value);
      return &root;
    }
    json& parent = *stack_.back().value;
    if (parent.is_array()) {
      level.index = parent.size();
      parent.push_back(std::move(value));
      return &parent.back();
    }
    level.key = slot_key_;
    *slot_ = std::move(value);
    return slot_;
  }

  bool put(json&& value) {
    Level ignored{};
    store(std::move(value), ignored);
    return true;
  }

  bool open(json&& container) {
    if (stack_.size() >= limits_.max_depth) {
      error = fmt::format("{}: JSON nested deeper than {} levels (offset {})", source_.name(), limits_.max_depth,
                          read_ - 1);
      return false;
    }
    Level level{};
    level.value = store(std::move(container), level);
    stack_.push_back(level);
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  std::string_view text_;
  const size_t& read_;  // bytes the lexer has read so far
  const JsonSource& source_;
  const JsonLimits& limits_;
  std::vector<Level> stack_;  // the open containers, outermost first
  json* slot_ = nullptr;      // where the value of the key just read goes
  const std::string* slot_key_ = nullptr;
};

}  // namespace

std::string clip_for_message(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  return fmt::format("{}... ({} bytes)", utf8::whole_prefix(text, max_bytes), text.size());
}

JsonDocument parse_strict_json(std::string_view text, const JsonSource& source, const JsonLimits& limits) {
  FG_CHECK(text.size() <= limits.max_bytes, "{}: {} bytes of JSON, over the limit of {} bytes", source.name(),
           text.size(), limits.max_bytes);
  // nlohmann refuses ill-formed UTF-8 too, but quotes the broken bytes in its message.
  if (const size_t bad = utf8::first_invalid(text); bad != std::string_view::npos) {
    fail("{}: not valid UTF-8 at offset {} (byte 0x{:02x} starts no valid sequence)", not_valid(source), bad,
         static_cast<unsigned char>(text[bad]));
  }
  size_t read = 0;
  StrictDomBuilder builder(text, read, source, limits);
  const CountingIterator begin(text.data(), &read), end(text.data() + text.size(), &read);
  if (!json::sax_parse(begin, end, &builder, json::input_format_t::json, /*strict=*/true)) {
    if (builder.error.empty()) builder.error = fmt::format("{}: refused by the JSON parser", not_valid(source));
    throw Error(builder.error);
  }
  return JsonDocument{std::move(builder.root), std::move(builder.top_level_keys), source.name()};
}

JsonDocument read_json_file(const std::string& path, const JsonLimits& limits) {
  return read_json_file(path, JsonSource{path, ""}, limits);
}

JsonDocument read_json_file(const std::string& path, const JsonSource& source, const JsonLimits& limits) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) fail("{}: cannot open: {}", path, ec ? ec.message() : std::string("does not exist"));
  // A FIFO would block the read; a directory reads as nothing.
  FG_CHECK(fs::is_regular_file(status), "{}: not a regular file ({})", path,
           fs::is_directory(status) ? "a directory" : "a device, socket or pipe");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open: {}", path, std::strerror(errno));
  const uintmax_t size = fs::file_size(path, ec);
  FG_CHECK(!ec, "{}: cannot read: {}", path, ec.message());
  FG_CHECK(size <= limits.max_bytes, "{}: {} bytes, over the limit of {} bytes for a JSON file", path, size,
           limits.max_bytes);
  std::string text(static_cast<size_t>(size), '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(size)))
    fail("{}: cannot read: {}", path, std::strerror(errno));
  return parse_strict_json(text, source, limits);
}

}  // namespace fg
