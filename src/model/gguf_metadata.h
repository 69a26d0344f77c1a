// model/gguf_metadata.h — the metadata of a GGUF file: typed values and lookups by key.
//
// Lookups are typed because a key of the wrong type in a hostile or mis-converted file must fail
// with the key, the type expected and the type found, not be reinterpreted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fg {

// The GGUF numbering of metadata value types.
enum class GgufValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
// The GGUF specification's spelling: "uint32", "float32", "bool", "string", "array".
std::string_view gguf_value_type_name(GgufValueType type);
// Whether `id` is a GGUF value type.
bool gguf_value_type_known(uint32_t id);
// Bytes of one number or bool of `type` in a file; 0 for strings and arrays.
size_t gguf_value_size(GgufValueType type);

// One metadata value: a number, a bool, a string, or an array of one of those (arrays of arrays
// are refused by the reader: no model key uses them).
struct GgufValue {
  GgufValueType type = GgufValueType::kU8;
  GgufValueType element_type = GgufValueType::kU8;  // arrays only
  uint64_t count = 1;                               // arrays: the number of elements; otherwise 1
  std::vector<std::byte> numbers;                   // numbers and bools, little-endian as in the file
  std::vector<std::string> strings;                 // a string (one), or an array of strings

  bool is_array() const { return type == GgufValueType::kArray; }
  // "uint32", "string", "array of 49152 string".
  std::string describe() const;
};

// The metadata of one file in file order, with typed lookups. Each lookup throws an fg::Error that
// names the file and the key, and for a type mismatch the type expected and the type found.
class GgufMetadata {
 public:
  explicit GgufMetadata(std::string source = {}) : source_(std::move(source)) {}

  // Adds a key; throws if it is already there.
  void add(std::string key, GgufValue value);

  size_t size() const { return keys_.size(); }
  const std::vector<std::string>& keys() const { return keys_; }  // in file order
  bool contains(const std::string& key) const { return values_.count(key) != 0; }
  const GgufValue* find(const std::string& key) const;
  const GgufValue& at(const std::string& key) const;

  const std::string& get_string(const std::string& key) const;
  // Any integer type; a uint64 above 2^63 - 1 is refused.
  int64_t get_int(const std::string& key) const;
  // float32 or float64 (a float32 widens exactly).
  double get_float(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  const std::vector<std::string>& get_string_array(const std::string& key) const;
  std::vector<int64_t> get_int_array(const std::string& key) const;
  std::vector<double> get_float_array(const std::string& key) const;
  std::vector<bool> get_bool_array(const std::string& key) const;

  // The same, with `fallback` when the key is absent (a present key of another type still throws).
  std::string get_string(const std::string& key, const std::string& fallback) const;
  int64_t get_int(const std::string& key, int64_t fallback) const;
  double get_float(const std::string& key, double fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;

 private:
  const GgufValue& typed(const std::string& key, bool array, std::string_view expected,
                         bool (*accepts)(GgufValueType)) const;

  std::string source_;
  std::vector<std::string> keys_;
  std::map<std::string, GgufValue> values_;
};

}  // namespace fg
