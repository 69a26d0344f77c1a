// tokenizer/jinja_value_access.cpp — reading into values: attribute and item access, slices,
// and Python iteration (list items, dict keys, a string's characters, a generator's items).
//
// Attribute and item access mirror jinja2's sandboxed getattr/getitem: `x.name` tries the Python
// attribute (a method) before the dict key, `x['name']` the key before the attribute, and a miss
// is an undefined value, not an error — only using an undefined value fails.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/jinja_interpreter_impl.h"
#include "tokenizer/jinja_methods.h"
#include "tokenizer/jinja_pystr.h"

namespace fg::jinja {

namespace {

bool hashable(const Value& v) {
  if (v.is_dict()) return false;
  if (v.is_list()) {
    if (!v.is_tuple()) return false;
    return std::all_of(v.items().begin(), v.items().end(), hashable);
  }
  return true;
}

std::string describe_owner(const Value& obj) {
  return obj.is_none() ? "'None'" : fmt::format("'{} object'", type_name(obj));
}

// Python's slice.indices(): clamps start/stop for `length` elements; returns the count.
int64_t slice_indices(int64_t length, const std::optional<int64_t>& start_arg, const std::optional<int64_t>& stop_arg,
                      int64_t step, int64_t& start) {
  // Clamping the step keeps the arithmetic below in range without changing the result.
  step = std::clamp<int64_t>(step, -(length + 1), length + 1);
  auto clamp_index = [&](int64_t i) {
    if (i < 0) {
      i += length;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= length) {
      i = step < 0 ? length - 1 : length;
    }
    return i;
  };
  start = start_arg ? clamp_index(*start_arg) : (step < 0 ? length - 1 : 0);
  const int64_t stop = stop_arg ? clamp_index(*stop_arg) : (step < 0 ? -1 : length);
  if (step > 0) return stop > start ? (stop - start + step - 1) / step : 0;
  return start > stop ? (start - stop - step - 1) / (-step) : 0;
}

}  // namespace

Value Interpreter::getattr(const Value& obj, std::string_view name) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (auto attr = python_attribute(obj, name)) return *attr;
  if (obj.is_dict()) {
    if (const Value* v = obj.dict_data().find(name)) return *v;
  }
  return Value::undefined(fmt::format("{} has no attribute '{}'", describe_owner(obj), name));
}

Value Interpreter::getitem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  switch (obj.kind()) {
    case Value::Kind::List:
      if (key.is_integral() && obj.seq_kind() <= SeqKind::kRange) {  // views cannot be indexed
        const auto& items = obj.items();
        int64_t i = key.as_int();
        if (i < 0) i += static_cast<int64_t>(items.size());
        if (i >= 0 && i < static_cast<int64_t>(items.size())) return items[static_cast<size_t>(i)];
      }
      break;
    case Value::Kind::String:
      if (key.is_integral()) {
        const std::string& s = obj.str();
        int64_t i = key.as_int();
        if (pystr::is_ascii(s)) {
          if (i < 0) i += static_cast<int64_t>(s.size());
          if (i >= 0 && i < static_cast<int64_t>(s.size()))
            return Value::string(std::string(1, s[static_cast<size_t>(i)]));
        } else {
          const std::u32string cps = pystr::decode(s);
          if (i < 0) i += static_cast<int64_t>(cps.size());
          if (i >= 0 && i < static_cast<int64_t>(cps.size())) {
            std::string c;
            pystr::append_utf8(c, cps[static_cast<size_t>(i)]);
            return Value::string(std::move(c));
          }
        }
      }
      break;
    case Value::Kind::Dict:
      if (hashable(key)) {
        if (const Value* v = obj.dict_data().find(key)) return *v;
      }
      break;
    default:
      break;
  }
  if (key.is_string()) {
    if (auto attr = python_attribute(obj, key.str())) return *attr;
  }
  std::string key_text;
  append_repr(key_text, key, meter_);
  return Value::undefined(fmt::format("{} has no element {}", describe_owner(obj), key_text));
}

Value Interpreter::slice(const Value& obj, const Expr& s, bool folded, const std::shared_ptr<Scope>& scope) {
  // jinja2 compiles slices to plain Python subscripts, bypassing the sandbox's forgiving
  // getitem, so a bad slice is an error rather than an undefined value.
  std::optional<int64_t> bounds[3];
  bool valid = true;
  for (int k = 0; k < 3; ++k) {
    if (!s.items[static_cast<size_t>(k)]) continue;
    const Value v = eval(*s.items[static_cast<size_t>(k)], scope);
    if (v.is_integral()) {
      bounds[k] = v.as_int();
    } else if (!v.is_none()) {
      valid = false;
    }
  }
  if (obj.is_undefined()) fail_undefined(obj);
  const bool sliceable =
      obj.is_string() || (obj.is_list() && (obj.is_plain_sequence() || obj.seq_kind() == SeqKind::kRange));
  if (!sliceable || !valid) {
    // jinja2 folds constant slices with the sandbox's forgiving getitem, but compiles the
    // others to plain Python subscripts, which raise.
    if (folded) return Value::undefined(fmt::format("{} has no element slice", describe_owner(obj)));
    if (obj.is_dict()) raise("unhashable type: 'slice'");
    if (!sliceable) raise("'{}' object is not subscriptable", type_name(obj));
    raise("slice indices must be integers or None or have an __index__ method");
  }
  const int64_t step = bounds[2].value_or(1);
  if (step == 0) raise("slice step cannot be zero");
  if (obj.is_list()) {
    const auto& items = obj.items();
    int64_t start = 0;
    const int64_t count = slice_indices(static_cast<int64_t>(items.size()), bounds[0], bounds[1], step, start);
    meter_.spend(count);
    std::vector<Value> out;
    out.reserve(static_cast<size_t>(count));
    for (int64_t k = 0, i = start; k < count; ++k, i += step) out.push_back(items[static_cast<size_t>(i)]);
    return Value::list(std::move(out), obj.is_tuple());
  }
  const std::u32string cps = pystr::decode(obj.str());
  int64_t start = 0;
  const int64_t count = slice_indices(static_cast<int64_t>(cps.size()), bounds[0], bounds[1], step, start);
  std::u32string out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t k = 0, i = start; k < count; ++k, i += step) out.push_back(cps[static_cast<size_t>(i)]);
  return make_string(pystr::encode(out));
}

std::vector<Value> Interpreter::iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return {};
    case Value::Kind::List:
      meter_.spend(static_cast<int64_t>(v.items().size()));
      return v.items();
    case Value::Kind::Object:
      if (const GeneratorObject* gen = as_generator(v)) {
        std::vector<Value> items;
        while (std::optional<Value> item = gen->next(*this)) {
          meter_.spend(1);
          items.push_back(std::move(*item));
        }
        return items;
      }
      raise("'{}' object is not iterable", type_name(v));
    case Value::Kind::Dict: {
      std::vector<Value> keys;
      keys.reserve(v.dict_data().entries.size());
      for (const auto& entry : v.dict_data().entries) keys.push_back(entry.first);
      meter_.spend(static_cast<int64_t>(keys.size()));
      return keys;
    }
    case Value::Kind::String: {
      std::vector<Value> chars;
      for (char32_t c : pystr::decode(v.str())) {
        std::string s;
        pystr::append_utf8(s, c);
        chars.push_back(Value::string(std::move(s)));
      }
      meter_.spend(static_cast<int64_t>(chars.size()));
      return chars;
    }
    default:
      raise("'{}' object is not iterable", type_name(v));
  }
}

}  // namespace fg::jinja
