// tokenizer/jinja_value.h — the values a chat template computes with, and the work meter.
//
// A Value is what a Python object is to Jinja: undefined, None, bool, int, float, str, list (or
// tuple), dict (insertion-ordered), a namespace, or an opaque object (macro, built-in function,
// bound method, loop context). Heavy payloads sit behind shared pointers so that copying a Value
// is cheap; every kind except the namespace is immutable, which is what the sandbox transformers
// uses enforces anyway. Containers record their nesting depth when built and refuse to nest past
// kMaxValueDepth, so that printing, comparing or destroying a value never recurses without bound.
//
// The Meter counts the work a render does (steps) and caps the size of any string it builds;
// helpers that can be made to loop or allocate in proportion to their input take one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/jinja_error.h"

namespace fg::jinja {

class Interpreter;
struct CallArgs;
class Value;

inline constexpr int kMaxValueDepth = 256;

class Meter {
 public:
  Meter(int64_t max_steps, size_t max_bytes) : max_steps_(max_steps), max_bytes_(max_bytes) {}
  void spend(int64_t steps) {
    steps_ += steps;
    if (steps_ > max_steps_) raise("step limit of {} exceeded", max_steps_);
  }
  // Any string (or list) the template builds is capped like the output itself.
  void check_size(size_t bytes) const {
    if (bytes > max_bytes_) raise("output size limit of {} bytes exceeded", max_bytes_);
  }
  size_t max_bytes() const { return max_bytes_; }
  int64_t steps() const { return steps_; }

 private:
  int64_t steps_ = 0;
  int64_t max_steps_;
  size_t max_bytes_;
};

// Macros, built-in functions, bound methods and loop contexts: values with behaviour.
class Object {
 public:
  virtual ~Object() = default;
  virtual std::string repr() const = 0;
  virtual const char* type_name() const = 0;
  virtual bool callable() const { return false; }
  virtual Value call(Interpreter& in, const CallArgs& args) const;
  // Attribute lookup (`loop.index`); nullopt when the object has no such attribute.
  virtual std::optional<Value> attribute(std::string_view name) const;
};

struct ListData;
struct DictData;
struct NamespaceData;

// Python's sequence types a template can meet. They share one representation; the kind decides
// how they print (`[1]`, `(1,)`, `range(0, 1)`, `dict_keys(['a'])`) and which operators apply.
enum class SeqKind : uint8_t { kList, kTuple, kRange, kDictKeys, kDictValues, kDictItems };

class Value {
 public:
  enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Object };

  Value() : kind_(Kind::Undefined), i_(0) {}
  // `hint` is what using the value would complain about ("'x' is undefined").
  static Value undefined(std::string hint);
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double f);
  static Value string(std::string s);
  static Value list(std::vector<Value> items, bool is_tuple = false);
  static Value sequence(std::vector<Value> items, SeqKind kind, std::string label = {});
  // Keys must be distinct (see DictBuilder for literals, where a repeated key overwrites).
  static Value dict(std::vector<std::pair<Value, Value>> entries);
  static Value ns(std::shared_ptr<NamespaceData> data);
  static Value object(std::shared_ptr<const Object> object);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_list() const { return kind_ == Kind::List; }  // any SeqKind
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_namespace() const { return kind_ == Kind::Namespace; }
  bool is_object() const { return kind_ == Kind::Object; }
  // Python's numbers.Number: bool counts (True + 1 == 2).
  bool is_number() const { return kind_ == Kind::Bool || kind_ == Kind::Int || kind_ == Kind::Float; }
  bool is_integral() const { return kind_ == Kind::Bool || kind_ == Kind::Int; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::Bool ? (b_ ? 1 : 0) : i_; }  // bool or int
  double as_double() const { return kind_ == Kind::Float ? f_ : static_cast<double>(as_int()); }
  const std::string& str() const { return *static_cast<const std::string*>(ptr_.get()); }
  const ListData& list_data() const { return *static_cast<const ListData*>(ptr_.get()); }
  const std::vector<Value>& items() const;
  SeqKind seq_kind() const;
  bool is_tuple() const { return seq_kind() == SeqKind::kTuple; }
  // list or tuple: the kinds that concatenate, repeat, order and serialise to JSON
  bool is_plain_sequence() const { return is_list() && seq_kind() <= SeqKind::kTuple; }
  const DictData& dict_data() const { return *static_cast<const DictData*>(ptr_.get()); }
  // The one mutable kind: `{% set ns.attr = ... %}` writes through every copy.
  NamespaceData& ns_data() const { return *const_cast<NamespaceData*>(static_cast<const NamespaceData*>(ptr_.get())); }
  const Object& object() const { return *static_cast<const Object*>(ptr_.get()); }
  const void* identity() const { return ptr_.get(); }
  std::string undefined_hint() const;
  int depth() const;  // containers: 1 + deepest element; scalars 0

 private:
  Kind kind_;
  union {
    bool b_;
    int64_t i_;
    double f_;
  };
  std::shared_ptr<const void> ptr_;
};

struct ListData {
  std::vector<Value> items;
  SeqKind kind = SeqKind::kList;
  int depth = 1;
  std::string label;  // kRange: how it prints, "range(0, 3)"
};

struct DictData {
  std::vector<std::pair<Value, Value>> entries;
  int depth = 1;
  // Built for large dicts only: string key -> index into entries.
  std::unordered_map<std::string, size_t> string_index;

  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
};

struct NamespaceData {
  std::vector<std::pair<std::string, Value>> attrs;
  std::unordered_map<std::string, size_t> index;
  int depth = 1;

  const Value* find(std::string_view name) const;
  void set(const std::string& name, Value value);
};

// Builds a dict the way a Python literal does: a repeated key keeps its first position and
// takes the last value. Keys must be hashable (not lists, dicts or namespaces).
class DictBuilder {
 public:
  void set(Value key, Value value);
  Value build() { return Value::dict(std::move(entries_)); }

 private:
  std::vector<std::pair<Value, Value>> entries_;
  std::unordered_map<std::string, size_t> string_index_;
};

// Python semantics shared by the interpreter, the filters and the methods.
bool truthy(const Value& v);
const char* type_name(const Value& v);  // Python's type(v).__name__
bool equals(const Value& a, const Value& b, Meter& meter);
// Python's ordering comparisons (bool/int/float, str, list/tuple); other pairs raise.
enum class Order { kLt, kLe, kGt, kGe };
bool ordered(const Value& a, Order op, const Value& b, Meter& meter);
inline bool less(const Value& a, const Value& b, Meter& meter) { return ordered(a, Order::kLt, b, meter); }
std::string to_str(const Value& v, Meter& meter);  // str(v); undefined prints as ""
void append_str(std::string& out, const Value& v, Meter& meter);
void append_repr(std::string& out, const Value& v, Meter& meter);
std::string py_float_repr(double x);
void require_hashable(const Value& key);
// Stable merge sort that stays in bounds even when `less` is not a strict weak order (NaN).
void stable_sort_values(std::vector<Value>& values, const std::function<bool(const Value&, const Value&)>& less);

// The undefined-value error: `x.y` on undefined x, `undefined + 1`, ...
[[noreturn]] void fail_undefined(const Value& v);

}  // namespace fg::jinja
