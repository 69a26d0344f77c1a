// tokenizer/jinja_callable.h — call arguments and their binding to Python-style signatures.
//
// Filters, tests, methods, macros and built-in functions all receive a CallArgs (positional
// values, then keyword values in call order). BoundArgs matches them against a parameter list
// the way Python does, so that `indent(2, first=true)` and `indent(width=2, first=true)` mean
// the same and a misspelled keyword is an error rather than silently ignored.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/jinja_value.h"

namespace fg::jinja {

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

class BoundArgs {
 public:
  // `function` names the callee in errors; the first `required` parameters must be given.
  BoundArgs(const CallArgs& args, std::string_view function, std::vector<std::string_view> names, size_t required = 0);

  bool has(size_t i) const { return slots_[i] != nullptr; }
  const Value& get(size_t i) const;  // an undefined Value when not given
  Value get_or(size_t i, Value fallback) const { return has(i) ? *slots_[i] : std::move(fallback); }
  // Typed accessors; `fallback` is used when the argument is absent.
  int64_t get_int(size_t i, int64_t fallback) const;
  bool get_bool(size_t i, bool fallback) const;  // Python truthiness
  std::string get_str(size_t i, const std::string& fallback) const;

 private:
  std::string function_;
  std::vector<std::string_view> names_;
  std::vector<const Value*> slots_;
};

// A callable implemented in C++: built-in functions, bound methods, loop.cycle.
class FunctionObject final : public Object {
 public:
  using Fn = std::function<Value(Interpreter&, const CallArgs&)>;
  FunctionObject(std::string repr, Fn fn) : repr_(std::move(repr)), fn_(std::move(fn)) {}
  std::string repr() const override { return repr_; }
  const char* type_name() const override { return "builtin_function_or_method"; }
  bool callable() const override { return true; }
  Value call(Interpreter& in, const CallArgs& args) const override { return fn_(in, args); }

 private:
  std::string repr_;
  Fn fn_;
};

inline Value make_function(std::string repr, FunctionObject::Fn fn) {
  return Value::object(std::make_shared<FunctionObject>(std::move(repr), std::move(fn)));
}

// A Python generator, which filters such as map, select and unique return: it computes its
// items on demand, can be consumed only once, is always true and has no length. Laziness
// matters for fidelity: `x|selectattr(...)` in an `if` is true even when nothing matches, and an
// error in a filter argument only surfaces when the generator is consumed.
class GeneratorObject final : public Object {
 public:
  using Next = std::function<std::optional<Value>(Interpreter&)>;
  GeneratorObject(std::string repr, Next next) : repr_(std::move(repr)), next_(std::move(next)) {}
  std::string repr() const override { return repr_; }
  const char* type_name() const override { return "generator"; }
  // The next item, or nullopt once exhausted.
  std::optional<Value> next(Interpreter& in) const;

 private:
  std::string repr_;
  mutable Next next_;  // released once exhausted
  mutable bool running_ = false;
};

inline const GeneratorObject* as_generator(const Value& v) {
  return v.is_object() ? dynamic_cast<const GeneratorObject*>(&v.object()) : nullptr;
}

// A value as an int argument (bool and int accepted), or an error naming `what`.
int64_t require_int(const Value& v, std::string_view what);
const std::string& require_str(const Value& v, std::string_view what);

}  // namespace fg::jinja
