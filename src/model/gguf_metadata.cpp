// model/gguf_metadata.cpp — GGUF value types, and the typed lookups of GgufMetadata.
#include "model/gguf_metadata.h"

#include <cstring>
#include <limits>
#include <optional>

#include "core/error.h"
#include "core/json/strict_json.h"

namespace fg {
namespace {

bool is_integer(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kU16:
    case GgufValueType::kI16:
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kU64:
    case GgufValueType::kI64: return true;
    default: return false;
  }
}
bool is_float(GgufValueType t) { return t == GgufValueType::kF32 || t == GgufValueType::kF64; }
bool is_bool(GgufValueType t) { return t == GgufValueType::kBool; }
bool is_string(GgufValueType t) { return t == GgufValueType::kString; }

template <typename T>
T load(const std::byte* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));  // the host is little-endian, as the file is (gguf.cpp checks)
  return value;
}

// Element `i` of an integer value; nullopt for a uint64 too large for int64.
std::optional<int64_t> integer_at(const GgufValue& v, GgufValueType t, uint64_t i) {
  const std::byte* p = v.numbers.data() + i * gguf_value_size(t);
  switch (t) {
    case GgufValueType::kU8: return load<uint8_t>(p);
    case GgufValueType::kI8: return load<int8_t>(p);
    case GgufValueType::kU16: return load<uint16_t>(p);
    case GgufValueType::kI16: return load<int16_t>(p);
    case GgufValueType::kU32: return load<uint32_t>(p);
    case GgufValueType::kI32: return load<int32_t>(p);
    case GgufValueType::kI64: return load<int64_t>(p);
    case GgufValueType::kU64: {
      uint64_t u = load<uint64_t>(p);
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(u);
    }
    default: break;
  }
  FG_ASSERT(false);
}

double float_at(const GgufValue& v, GgufValueType t, uint64_t i) {
  const std::byte* p = v.numbers.data() + i * gguf_value_size(t);
  return t == GgufValueType::kF32 ? static_cast<double>(load<float>(p)) : load<double>(p);
}

}  // namespace

std::string_view gguf_value_type_name(GgufValueType type) {
  switch (type) {
    case GgufValueType::kU8: return "uint8";
    case GgufValueType::kI8: return "int8";
    case GgufValueType::kU16: return "uint16";
    case GgufValueType::kI16: return "int16";
    case GgufValueType::kU32: return "uint32";
    case GgufValueType::kI32: return "int32";
    case GgufValueType::kF32: return "float32";
    case GgufValueType::kBool: return "bool";
    case GgufValueType::kString: return "string";
    case GgufValueType::kArray: return "array";
    case GgufValueType::kU64: return "uint64";
    case GgufValueType::kI64: return "int64";
    case GgufValueType::kF64: return "float64";
  }
  return "unknown";
}

bool gguf_value_type_known(uint32_t id) { return id <= static_cast<uint32_t>(GgufValueType::kF64); }

size_t gguf_value_size(GgufValueType type) {
  switch (type) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kBool: return 1;
    case GgufValueType::kU16:
    case GgufValueType::kI16: return 2;
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kF32: return 4;
    case GgufValueType::kU64:
    case GgufValueType::kI64:
    case GgufValueType::kF64: return 8;
    case GgufValueType::kString:
    case GgufValueType::kArray: return 0;
  }
  return 0;
}

std::string GgufValue::describe() const {
  if (!is_array()) return std::string(gguf_value_type_name(type));
  return fmt::format("array of {} {}", count, gguf_value_type_name(element_type));
}

void GgufMetadata::add(std::string key, GgufValue value) {
  auto [it, inserted] = values_.try_emplace(key, std::move(value));
  FG_CHECK(inserted, "{}: metadata key '{}' appears twice", source_, clip_for_message(key));
  keys_.push_back(std::move(key));
}

const GgufValue* GgufMetadata::find(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

const GgufValue& GgufMetadata::at(const std::string& key) const {
  const GgufValue* value = find(key);
  FG_CHECK(value != nullptr, "{}: no metadata key '{}' ({} keys)", source_, clip_for_message(key), keys_.size());
  return *value;
}

const GgufValue& GgufMetadata::typed(const std::string& key, bool array, std::string_view expected,
                                     bool (*accepts)(GgufValueType)) const {
  const GgufValue& value = at(key);
  const bool ok = array ? value.is_array() && accepts(value.element_type) : !value.is_array() && accepts(value.type);
  FG_CHECK(ok, "{}: metadata key '{}' is {}, expected {}", source_, clip_for_message(key), value.describe(), expected);
  return value;
}

const std::string& GgufMetadata::get_string(const std::string& key) const {
  return typed(key, false, "a string", is_string).strings.front();
}

int64_t GgufMetadata::get_int(const std::string& key) const {
  const GgufValue& value = typed(key, false, "an integer", is_integer);
  std::optional<int64_t> n = integer_at(value, value.type, 0);
  FG_CHECK(n.has_value(), "{}: metadata key '{}' is the uint64 {}, larger than 2^63 - 1", source_,
           clip_for_message(key), load<uint64_t>(value.numbers.data()));
  return *n;
}

double GgufMetadata::get_float(const std::string& key) const {
  const GgufValue& value = typed(key, false, "a float32 or float64", is_float);
  return float_at(value, value.type, 0);
}

bool GgufMetadata::get_bool(const std::string& key) const {
  return typed(key, false, "a bool", is_bool).numbers.front() != std::byte{0};
}

const std::vector<std::string>& GgufMetadata::get_string_array(const std::string& key) const {
  return typed(key, true, "an array of string", is_string).strings;
}

std::vector<int64_t> GgufMetadata::get_int_array(const std::string& key) const {
  const GgufValue& value = typed(key, true, "an array of integers", is_integer);
  std::vector<int64_t> out(value.count);
  for (uint64_t i = 0; i < value.count; ++i) {
    std::optional<int64_t> n = integer_at(value, value.element_type, i);
    FG_CHECK(n.has_value(), "{}: metadata key '{}' element {} is the uint64 {}, larger than 2^63 - 1", source_,
             clip_for_message(key), i, load<uint64_t>(value.numbers.data() + 8 * i));
    out[i] = *n;
  }
  return out;
}

std::vector<double> GgufMetadata::get_float_array(const std::string& key) const {
  const GgufValue& value = typed(key, true, "an array of float32 or float64", is_float);
  std::vector<double> out(value.count);
  for (uint64_t i = 0; i < value.count; ++i) out[i] = float_at(value, value.element_type, i);
  return out;
}

std::vector<bool> GgufMetadata::get_bool_array(const std::string& key) const {
  const GgufValue& value = typed(key, true, "an array of bool", is_bool);
  std::vector<bool> out(value.count);
  for (uint64_t i = 0; i < value.count; ++i) out[i] = value.numbers[i] != std::byte{0};
  return out;
}

std::string GgufMetadata::get_string(const std::string& key, const std::string& fallback) const {
  return contains(key) ? get_string(key) : fallback;
}
int64_t GgufMetadata::get_int(const std::string& key, int64_t fallback) const {
  return contains(key) ? get_int(key) : fallback;
}
double GgufMetadata::get_float(const std::string& key, double fallback) const {
  return contains(key) ? get_float(key) : fallback;
}
bool GgufMetadata::get_bool(const std::string& key, bool fallback) const {
  return contains(key) ? get_bool(key) : fallback;
}

}  // namespace fg
