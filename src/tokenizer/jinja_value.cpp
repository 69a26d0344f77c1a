// tokenizer/jinja_value.cpp — Value construction and the Python semantics every part of the
// engine shares: truthiness, ==, ordering, str() and repr() (see jinja_value.h).
#include "tokenizer/jinja_value.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "tokenizer/jinja_pystr.h"

namespace fg::jinja {

namespace {

constexpr size_t kIndexThreshold = 16;  // dicts larger than this get a string-key index

int depth_of(const std::vector<Value>& items) {
  int d = 0;
  for (const Value& v : items) d = std::max(d, v.depth());
  return d + 1;
}

void check_depth(int depth) {
  if (depth > kMaxValueDepth) raise("value nested more than {} levels deep", kMaxValueDepth);
}

// Equality of hashable keys (None, bool, int, float, str, tuples of those), as a dict sees it.
bool key_equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::None:
      return true;
    case Value::Kind::String:
      return a.str() == b.str();
    case Value::Kind::List: {
      if (a.seq_kind() != b.seq_kind()) return false;
      const auto& x = a.items();
      const auto& y = b.items();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!key_equals(x[i], y[i])) return false;
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

bool apply_order(Order op, int cmp) {
  switch (op) {
    case Order::kLt:
      return cmp < 0;
    case Order::kLe:
      return cmp <= 0;
    case Order::kGt:
      return cmp > 0;
    case Order::kGe:
      return cmp >= 0;
  }
  return false;
}

const char* order_symbol(Order op) {
  switch (op) {
    case Order::kLt:
      return "<";
    case Order::kLe:
      return "<=";
    case Order::kGt:
      return ">";
    case Order::kGe:
      return ">=";
  }
  return "?";
}

void repr_into(std::string& out, const Value& v, Meter& meter, std::vector<const void*>& open_namespaces, int depth);

void str_into(std::string& out, const Value& v, Meter& meter, std::vector<const void*>& open_namespaces, int depth) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return;
    case Value::Kind::String:
      out.append(v.str());
      return;
    case Value::Kind::None:
      out.append("None");
      return;
    case Value::Kind::Bool:
      out.append(v.as_bool() ? "True" : "False");
      return;
    case Value::Kind::Int:
      out.append(std::to_string(v.as_int()));
      return;
    case Value::Kind::Float:
      out.append(py_float_repr(v.as_double()));
      return;
    default:
      repr_into(out, v, meter, open_namespaces, depth);
  }
}

void repr_into(std::string& out, const Value& v, Meter& meter, std::vector<const void*>& open_namespaces, int depth) {
  // Namespaces can contain themselves, so their nesting is not bounded at construction.
  if (depth > kMaxValueDepth + 1) raise("value nested too deeply to print");
  meter.spend(1);
  switch (v.kind()) {
    case Value::Kind::Undefined:
      out.append("Undefined");
      break;
    case Value::Kind::String:
      out.append(pystr::repr(v.str()));
      break;
    case Value::Kind::List: {
      const SeqKind kind = v.seq_kind();
      if (kind == SeqKind::kRange) {
        out.append(v.list_data().label);
        break;
      }
      const bool tuple = kind == SeqKind::kTuple;
      const char* view = kind == SeqKind::kDictKeys     ? "dict_keys("
                         : kind == SeqKind::kDictValues ? "dict_values("
                         : kind == SeqKind::kDictItems  ? "dict_items("
                                                        : "";
      out.append(view);
      out.push_back(tuple ? '(' : '[');
      const auto& items = v.items();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out.append(", ");
        repr_into(out, items[i], meter, open_namespaces, depth + 1);
        meter.check_size(out.size());
      }
      if (tuple && items.size() == 1) out.push_back(',');
      out.push_back(tuple ? ')' : ']');
      if (*view) out.push_back(')');
      break;
    }
    case Value::Kind::Dict: {
      out.push_back('{');
      bool first = true;
      for (const auto& [key, value] : v.dict_data().entries) {
        if (!first) out.append(", ");
        first = false;
        repr_into(out, key, meter, open_namespaces, depth + 1);
        out.append(": ");
        repr_into(out, value, meter, open_namespaces, depth + 1);
        meter.check_size(out.size());
      }
      out.push_back('}');
      break;
    }
    case Value::Kind::Namespace: {
      out.append("<Namespace ");
      const void* id = v.identity();
      if (std::find(open_namespaces.begin(), open_namespaces.end(), id) != open_namespaces.end()) {
        out.append("{...}>");  // CPython's guard against printing a container inside itself
        break;
      }
      open_namespaces.push_back(id);
      out.push_back('{');
      bool first = true;
      for (const auto& [name, value] : v.ns_data().attrs) {
        if (!first) out.append(", ");
        first = false;
        out.append(pystr::repr(name));
        out.append(": ");
        repr_into(out, value, meter, open_namespaces, depth + 1);
        meter.check_size(out.size());
      }
      out.append("}>");
      open_namespaces.pop_back();
      break;
    }
    case Value::Kind::Object:
      out.append(v.object().repr());
      break;
    default:
      str_into(out, v, meter, open_namespaces, depth);
  }
  meter.check_size(out.size());
}

}  // namespace

Value Object::call(Interpreter&, const CallArgs&) const { raise("'{}' object is not callable", type_name()); }
std::optional<Value> Object::attribute(std::string_view) const { return std::nullopt; }

Value Value::undefined(std::string hint) {
  Value v;
  if (!hint.empty()) v.ptr_ = std::make_shared<const std::string>(std::move(hint));
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.b_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::Int;
  v.i_ = i;
  return v;
}

Value Value::number(double f) {
  Value v;
  v.kind_ = Kind::Float;
  v.f_ = f;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::String;
  v.ptr_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

Value Value::list(std::vector<Value> items, bool is_tuple) {
  return sequence(std::move(items), is_tuple ? SeqKind::kTuple : SeqKind::kList);
}

Value Value::sequence(std::vector<Value> items, SeqKind kind, std::string label) {
  auto data = std::make_shared<ListData>();
  data->depth = depth_of(items);
  check_depth(data->depth);
  data->items = std::move(items);
  data->kind = kind;
  data->label = std::move(label);
  Value v;
  v.kind_ = Kind::List;
  v.ptr_ = std::move(data);
  return v;
}

Value Value::dict(std::vector<std::pair<Value, Value>> entries) {
  auto data = std::make_shared<DictData>();
  int d = 0;
  for (const auto& [key, value] : entries) d = std::max({d, key.depth(), value.depth()});
  data->depth = d + 1;
  check_depth(data->depth);
  data->entries = std::move(entries);
  if (data->entries.size() > kIndexThreshold) {
    for (size_t i = 0; i < data->entries.size(); ++i)
      if (data->entries[i].first.is_string()) data->string_index.emplace(data->entries[i].first.str(), i);
  }
  Value v;
  v.kind_ = Kind::Dict;
  v.ptr_ = std::move(data);
  return v;
}

Value Value::ns(std::shared_ptr<NamespaceData> data) {
  Value v;
  v.kind_ = Kind::Namespace;
  v.ptr_ = std::move(data);
  return v;
}

Value Value::object(std::shared_ptr<const Object> object) {
  Value v;
  v.kind_ = Kind::Object;
  v.ptr_ = std::move(object);
  return v;
}

const std::vector<Value>& Value::items() const { return list_data().items; }
SeqKind Value::seq_kind() const { return list_data().kind; }

std::string Value::undefined_hint() const {
  if (kind_ == Kind::Undefined && ptr_) return *static_cast<const std::string*>(ptr_.get());
  return "value is undefined";
}

int Value::depth() const {
  switch (kind_) {
    case Kind::List:
      return list_data().depth;
    case Kind::Dict:
      return dict_data().depth;
    case Kind::Namespace:
      return ns_data().depth;
    default:
      return 0;
  }
}

const Value* DictData::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.str()));
  for (const auto& entry : entries)
    if (key_equals(entry.first, key)) return &entry.second;
  return nullptr;
}

const Value* DictData::find(std::string_view key) const {
  if (!string_index.empty()) {
    auto it = string_index.find(std::string(key));
    return it == string_index.end() ? nullptr : &entries[it->second].second;
  }
  for (const auto& entry : entries)
    if (entry.first.is_string() && entry.first.str() == key) return &entry.second;
  return nullptr;
}

const Value* NamespaceData::find(std::string_view name) const {
  auto it = index.find(std::string(name));
  return it == index.end() ? nullptr : &attrs[it->second].second;
}

void NamespaceData::set(const std::string& name, Value value) {
  const int d = std::max(depth, value.depth() + 1);
  check_depth(d);
  depth = d;
  auto it = index.find(name);
  if (it != index.end()) {
    attrs[it->second].second = std::move(value);
  } else {
    index.emplace(name, attrs.size());
    attrs.emplace_back(name, std::move(value));
  }
}

void DictBuilder::set(Value key, Value value) {
  require_hashable(key);
  if (key.is_string()) {
    auto [it, inserted] = string_index_.emplace(key.str(), entries_.size());
    if (!inserted) {
      entries_[it->second].second = std::move(value);
      return;
    }
    entries_.emplace_back(std::move(key), std::move(value));
    return;
  }
  for (auto& entry : entries_) {
    if (key_equals(entry.first, key)) {
      entry.second = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

void require_hashable(const Value& key) {
  switch (key.kind()) {
    case Value::Kind::List:
      if (key.seq_kind() == SeqKind::kRange) return;
      if (!key.is_tuple()) raise("unhashable type: '{}'", type_name(key));
      for (const Value& item : key.items()) require_hashable(item);
      return;
    case Value::Kind::Dict:
      raise("unhashable type: 'dict'");
    case Value::Kind::Undefined:
      fail_undefined(key);
    default:
      return;
  }
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
      return false;
    case Value::Kind::Bool:
      return v.as_bool();
    case Value::Kind::Int:
      return v.as_int() != 0;
    case Value::Kind::Float:
      return v.as_double() != 0.0;  // NaN is true, as in Python
    case Value::Kind::String:
      return !v.str().empty();
    case Value::Kind::List:
      return !v.items().empty();
    case Value::Kind::Dict:
      return !v.dict_data().entries.empty();
    default:
      return true;
  }
}

const char* type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return "Undefined";
    case Value::Kind::None:
      return "NoneType";
    case Value::Kind::Bool:
      return "bool";
    case Value::Kind::Int:
      return "int";
    case Value::Kind::Float:
      return "float";
    case Value::Kind::String:
      return "str";
    case Value::Kind::List:
      switch (v.seq_kind()) {
        case SeqKind::kList:
          return "list";
        case SeqKind::kTuple:
          return "tuple";
        case SeqKind::kRange:
          return "range";
        case SeqKind::kDictKeys:
          return "dict_keys";
        case SeqKind::kDictValues:
          return "dict_values";
        case SeqKind::kDictItems:
          return "dict_items";
      }
      return "list";
    case Value::Kind::Dict:
      return "dict";
    case Value::Kind::Namespace:
      return "Namespace";
    case Value::Kind::Object:
      return v.object().type_name();
  }
  return "object";
}

bool equals(const Value& a, const Value& b, Meter& meter) {
  meter.spend(1);
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
      return true;
    case Value::Kind::String:
      return a.str() == b.str();
    case Value::Kind::List: {
      if (a.seq_kind() != b.seq_kind()) return false;
      if (a.identity() == b.identity()) return true;
      const auto& x = a.items();
      const auto& y = b.items();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!equals(x[i], y[i], meter)) return false;
      return true;
    }
    case Value::Kind::Dict: {
      if (a.identity() == b.identity()) return true;
      const auto& x = a.dict_data();
      const auto& y = b.dict_data();
      if (x.entries.size() != y.entries.size()) return false;
      for (const auto& [key, value] : x.entries) {
        meter.spend(1);
        const Value* other = y.find(key);
        if (!other || !equals(value, *other, meter)) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

bool ordered(const Value& a, Order op, const Value& b, Meter& meter) {
  meter.spend(1);
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) {
      const int64_t x = a.as_int(), y = b.as_int();
      return apply_order(op, x < y ? -1 : (x > y ? 1 : 0));
    }
    const double x = a.as_double(), y = b.as_double();
    switch (op) {  // written out so that NaN compares false both ways
      case Order::kLt:
        return x < y;
      case Order::kLe:
        return x <= y;
      case Order::kGt:
        return x > y;
      case Order::kGe:
        return x >= y;
    }
  }
  if (a.is_string() && b.is_string()) return apply_order(op, a.str().compare(b.str()));
  if (a.is_plain_sequence() && b.is_plain_sequence() && a.is_tuple() == b.is_tuple()) {
    const auto& x = a.items();
    const auto& y = b.items();
    const size_t n = std::min(x.size(), y.size());
    for (size_t i = 0; i < n; ++i)
      if (!equals(x[i], y[i], meter)) return ordered(x[i], op, y[i], meter);
    return apply_order(op, x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0));
  }
  raise("'{}' not supported between instances of '{}' and '{}'", order_symbol(op), type_name(a), type_name(b));
}

std::string py_float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, then CPython's layout rule for repr(float).
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof(buf), x, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(result.ptr - buf));
  std::string out;
  if (sci.front() == '-') {
    out.push_back('-');
    sci.remove_prefix(1);
  }
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos))
    if (c != '.') digits.push_back(c);
  const int exponent = std::stoi(std::string(sci.substr(e_pos + 1)));
  const int decpt = exponent + 1;  // digits d1d2... mean 0.d1d2... * 10^decpt
  const int n = static_cast<int>(digits.size());
  if (decpt <= -4 || decpt > 16) {
    out.push_back(digits[0]);
    if (n > 1) {
      out.push_back('.');
      out.append(digits, 1);
    }
    out.append(fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent)));
  } else if (decpt <= 0) {
    out.append("0.");
    out.append(static_cast<size_t>(-decpt), '0');
    out.append(digits);
  } else if (decpt >= n) {
    out.append(digits);
    out.append(static_cast<size_t>(decpt - n), '0');
    out.append(".0");
  } else {
    out.append(digits, 0, static_cast<size_t>(decpt));
    out.push_back('.');
    out.append(digits, static_cast<size_t>(decpt));
  }
  return out;
}

std::string to_str(const Value& v, Meter& meter) {
  if (v.is_string()) return v.str();
  std::string out;
  append_str(out, v, meter);
  return out;
}

void append_str(std::string& out, const Value& v, Meter& meter) {
  std::vector<const void*> open_namespaces;
  str_into(out, v, meter, open_namespaces, 0);
}

void append_repr(std::string& out, const Value& v, Meter& meter) {
  std::vector<const void*> open_namespaces;
  repr_into(out, v, meter, open_namespaces, 0);
}

void stable_sort_values(std::vector<Value>& values, const std::function<bool(const Value&, const Value&)>& less) {
  // Bottom-up merge sort: every index it touches is computed from sizes alone, so an
  // inconsistent comparator can give a strange order but never reads out of bounds.
  std::vector<Value> buffer(values.size());
  for (size_t width = 1; width < values.size(); width *= 2) {
    for (size_t lo = 0; lo < values.size(); lo += 2 * width) {
      const size_t mid = std::min(lo + width, values.size());
      const size_t hi = std::min(lo + 2 * width, values.size());
      size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) buffer[k++] = less(values[j], values[i]) ? values[j++] : values[i++];
      while (i < mid) buffer[k++] = values[i++];
      while (j < hi) buffer[k++] = values[j++];
    }
    values.swap(buffer);
  }
}

void fail_undefined(const Value& v) { throw TemplateError(v.undefined_hint()); }

}  // namespace fg::jinja
