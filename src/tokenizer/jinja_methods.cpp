// tokenizer/jinja_methods.cpp — str/list/dict methods and the global functions (see
// jinja_methods.h). Each method re-implements the Python method of the same name.
#include "tokenizer/jinja_methods.h"

#include <fmt/format.h>

#include <ctime>
#include <unordered_map>
#include <unordered_set>

#include "tokenizer/jinja_callable.h"
#include "tokenizer/jinja_interpreter.h"
#include "tokenizer/jinja_operators.h"
#include "tokenizer/jinja_pystr.h"

namespace fg::jinja {

namespace {

using Method = Value (*)(Interpreter& in, const Value& self, const CallArgs& args);

// Python's optional start/end index arguments: None or an integer.
std::optional<int64_t> optional_index(const BoundArgs& a, size_t i) {
  if (!a.has(i) || a.get(i).is_none()) return std::nullopt;
  return require_int(a.get(i), "slice index");
}

std::optional<std::string> optional_chars(const BoundArgs& a, size_t i) {
  if (!a.has(i) || a.get(i).is_none()) return std::nullopt;
  return require_str(a.get(i), "argument");
}

Value string_list(std::vector<std::string> parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (std::string& p : parts) items.push_back(Value::string(std::move(p)));
  return Value::list(std::move(items));
}

// startswith/endswith accept one prefix or a tuple of them.
Value affix_test(const Value& self, const CallArgs& args, const char* name, bool prefix) {
  BoundArgs a(args, name, {"prefix", "start", "end"}, 1);
  const pystr::Span span{optional_index(a, 1), optional_index(a, 2)};
  std::vector<std::string> options;
  if (a.get(0).is_list() && a.get(0).is_tuple()) {
    for (const Value& v : a.get(0).items()) options.push_back(require_str(v, name));
  } else {
    if (!a.get(0).is_string()) raise("{} first arg must be str or a tuple of str, not {}", name, type_name(a.get(0)));
    options.push_back(a.get(0).str());
  }
  for (const std::string& option : options) {
    if (prefix ? pystr::startswith(self.str(), option, span) : pystr::endswith(self.str(), option, span))
      return Value::boolean(true);
  }
  return Value::boolean(false);
}

Value s_startswith(Interpreter&, const Value& self, const CallArgs& args) {
  return affix_test(self, args, "startswith", true);
}
Value s_endswith(Interpreter&, const Value& self, const CallArgs& args) {
  return affix_test(self, args, "endswith", false);
}

Value s_split(Interpreter& in, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "split", {"sep", "maxsplit"});
  in.meter().spend(static_cast<int64_t>(self.str().size() / 16));
  return string_list(pystr::split(self.str(), optional_chars(a, 0), a.get_int(1, -1)));
}

Value s_rsplit(Interpreter& in, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "rsplit", {"sep", "maxsplit"});
  in.meter().spend(static_cast<int64_t>(self.str().size() / 16));
  return string_list(pystr::rsplit(self.str(), optional_chars(a, 0), a.get_int(1, -1)));
}

Value s_splitlines(Interpreter&, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "splitlines", {"keepends"});
  return string_list(pystr::splitlines(self.str(), a.get_bool(0, false)));
}

template <bool left, bool right>
Value s_strip(Interpreter& in, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "strip", {"chars"});
  return in.make_string(pystr::strip(self.str(), optional_chars(a, 0), left, right));
}

template <std::string (*fn)(std::string_view)>
Value s_case(Interpreter& in, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "method", {});
  return in.make_string(fn(self.str()));
}

Value s_replace(Interpreter& in, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "replace", {"old", "new", "count"}, 2);
  const std::string& old = require_str(a.get(0), "replace() argument 1");
  const std::string& with = require_str(a.get(1), "replace() argument 2");
  const std::string& s = self.str();
  const size_t hits = old.empty() ? s.size() + 1 : s.size() / old.size();
  if (with.size() > old.size() && hits > 0 && (with.size() - old.size()) > in.meter().max_bytes() / hits)
    in.meter().check_size(s.size() + hits * (with.size() - old.size()));
  in.meter().spend(static_cast<int64_t>(s.size() / 64));
  return in.make_string(pystr::replace(s, old, with, a.get_int(2, -1)));
}

Value find_impl(const Value& self, const CallArgs& args, const char* name, bool reverse, bool must_find) {
  BoundArgs a(args, name, {"sub", "start", "end"}, 1);
  const int64_t at =
      pystr::find(self.str(), require_str(a.get(0), name), {optional_index(a, 1), optional_index(a, 2)}, reverse);
  if (must_find && at < 0) raise("substring not found");
  return Value::integer(at);
}

Value s_find(Interpreter&, const Value& self, const CallArgs& args) {
  return find_impl(self, args, "find", false, false);
}
Value s_rfind(Interpreter&, const Value& self, const CallArgs& args) {
  return find_impl(self, args, "rfind", true, false);
}
Value s_index(Interpreter&, const Value& self, const CallArgs& args) {
  return find_impl(self, args, "index", false, true);
}
Value s_rindex(Interpreter&, const Value& self, const CallArgs& args) {
  return find_impl(self, args, "rindex", true, true);
}

Value s_count(Interpreter&, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "count", {"sub", "start", "end"}, 1);
  return Value::integer(
      pystr::count(self.str(), require_str(a.get(0), "count"), {optional_index(a, 1), optional_index(a, 2)}));
}

Value s_join(Interpreter& in, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "join", {"iterable"}, 1);
  std::string out;
  size_t i = 0;
  for (const Value& item : in.iterate(a.get(0))) {
    if (!item.is_string()) raise("sequence item {}: expected str instance, {} found", i, type_name(item));
    if (i++) out += self.str();
    out += item.str();
    in.meter().check_size(out.size());
  }
  return in.make_string(std::move(out));
}

Value s_format(Interpreter& in, const Value& self, const CallArgs& args) {
  return in.make_string(brace_format(self.str(), args.positional, args.keyword, in.meter()));
}

template <bool (*pred)(char32_t)>
Value s_is(Interpreter&, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "method", {});
  const std::u32string cps = pystr::decode(self.str());
  return Value::boolean(!cps.empty() && std::all_of(cps.begin(), cps.end(), pred));
}

Value s_islower(Interpreter&, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "islower", {});
  return Value::boolean(pystr::is_lower(self.str()));
}

Value s_isupper(Interpreter&, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "isupper", {});
  return Value::boolean(pystr::is_upper(self.str()));
}

Value s_removeprefix(Interpreter& in, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "removeprefix", {"prefix"}, 1);
  const std::string& p = require_str(a.get(0), "removeprefix");
  const std::string& s = self.str();
  return s.compare(0, p.size(), p) == 0 ? in.make_string(s.substr(p.size())) : self;
}

Value s_removesuffix(Interpreter& in, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "removesuffix", {"suffix"}, 1);
  const std::string& p = require_str(a.get(0), "removesuffix");
  const std::string& s = self.str();
  if (!p.empty() && s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0)
    return in.make_string(s.substr(0, s.size() - p.size()));
  return self;
}

// center/ljust/rjust: `align` is 'c', 'l' or 'r'.
template <char align>
Value s_justify(Interpreter& in, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "justify", {"width", "fillchar"}, 1);
  const int64_t width = a.get_int(0, 0), len = pystr::length(self.str());
  const std::string fill = a.get_str(1, " ");
  if (pystr::length(fill) != 1) raise("The fill character must be exactly one character long");
  if (width <= len) return self;
  in.meter().check_size(static_cast<size_t>(width) * fill.size());
  const int64_t margin = width - len;
  int64_t left = align == 'l' ? 0 : align == 'r' ? margin : margin / 2 + (margin & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += self.str();
  for (int64_t i = 0; i < margin - left; ++i) out += fill;
  return in.make_string(std::move(out));
}

Value s_zfill(Interpreter& in, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "zfill", {"width"}, 1);
  const std::string& s = self.str();
  const int64_t width = a.get_int(0, 0), len = pystr::length(s);
  if (width <= len) return self;
  in.meter().check_size(static_cast<size_t>(width));
  const size_t sign = !s.empty() && (s[0] == '+' || s[0] == '-') ? 1 : 0;
  return in.make_string(s.substr(0, sign) + std::string(static_cast<size_t>(width - len), '0') + s.substr(sign));
}

template <bool reverse>
Value s_partition(Interpreter&, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "partition", {"sep"}, 1);
  const std::string& sep = require_str(a.get(0), "partition");
  if (sep.empty()) raise("empty separator");
  const std::string& s = self.str();
  const size_t at = reverse ? s.rfind(sep) : s.find(sep);
  if (at == std::string::npos) {
    return reverse ? Value::list({Value::string(""), Value::string(""), self}, true)
                   : Value::list({self, Value::string(""), Value::string("")}, true);
  }
  return Value::list({Value::string(s.substr(0, at)), Value::string(sep), Value::string(s.substr(at + sep.size()))},
                     true);
}

Value l_index(Interpreter& in, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "index", {"value"}, 1);
  const auto& items = self.items();
  for (size_t i = 0; i < items.size(); ++i)
    if (equals(items[i], a.get(0), in.meter())) return Value::integer(static_cast<int64_t>(i));
  raise("value is not in list");
}

Value l_count(Interpreter& in, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "count", {"value"}, 1);
  int64_t n = 0;
  for (const Value& item : self.items())
    if (equals(item, a.get(0), in.meter())) ++n;
  return Value::integer(n);
}

Value copy(Interpreter&, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "copy", {});
  return self;  // values are immutable, so a copy is the same value
}

Value d_get(Interpreter&, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "get", {"key", "default"}, 1);
  require_hashable(a.get(0));
  if (const Value* v = self.dict_data().find(a.get(0))) return *v;
  return a.get_or(1, Value::none());
}

// dict.items()/keys()/values() return views: iterable, sized, printed as dict_items([...]).
Value d_items(Interpreter& in, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "items", {});
  std::vector<Value> pairs;
  for (const auto& [key, value] : self.dict_data().entries) pairs.push_back(Value::list({key, value}, true));
  in.meter().spend(static_cast<int64_t>(pairs.size()));
  return Value::sequence(std::move(pairs), SeqKind::kDictItems);
}

Value d_keys(Interpreter& in, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "keys", {});
  std::vector<Value> keys;
  for (const auto& entry : self.dict_data().entries) keys.push_back(entry.first);
  in.meter().spend(static_cast<int64_t>(keys.size()));
  return Value::sequence(std::move(keys), SeqKind::kDictKeys);
}

Value d_values(Interpreter& in, const Value& self, const CallArgs& args) {
  BoundArgs a(args, "values", {});
  std::vector<Value> values;
  for (const auto& entry : self.dict_data().entries) values.push_back(entry.second);
  in.meter().spend(static_cast<int64_t>(values.size()));
  return Value::sequence(std::move(values), SeqKind::kDictValues);
}

const std::unordered_map<std::string_view, Method>& string_methods() {
  static const std::unordered_map<std::string_view, Method> table = {
      {"startswith", s_startswith},
      {"endswith", s_endswith},
      {"split", s_split},
      {"rsplit", s_rsplit},
      {"splitlines", s_splitlines},
      {"strip", s_strip<true, true>},
      {"lstrip", s_strip<true, false>},
      {"rstrip", s_strip<false, true>},
      {"upper", s_case<pystr::upper>},
      {"lower", s_case<pystr::lower>},
      {"title", s_case<pystr::title>},
      {"capitalize", s_case<pystr::capitalize>},
      {"swapcase", s_case<pystr::swapcase>},
      {"replace", s_replace},
      {"find", s_find},
      {"rfind", s_rfind},
      {"index", s_index},
      {"rindex", s_rindex},
      {"count", s_count},
      {"join", s_join},
      {"format", s_format},
      {"isdigit", s_is<pystr::is_digit>},
      {"isdecimal", s_is<pystr::is_decimal>},
      {"isnumeric", s_is<pystr::is_digit>},
      {"isalpha", s_is<pystr::is_alpha>},
      {"isalnum", s_is<pystr::is_alnum>},
      {"isspace", s_is<pystr::is_space>},
      {"islower", s_islower},
      {"isupper", s_isupper},
      {"removeprefix", s_removeprefix},
      {"removesuffix", s_removesuffix},
      {"center", s_justify<'c'>},
      {"ljust", s_justify<'l'>},
      {"rjust", s_justify<'r'>},
      {"zfill", s_zfill},
      {"partition", s_partition<false>},
      {"rpartition", s_partition<true>},
  };
  return table;
}

const std::unordered_map<std::string_view, Method>& list_methods() {
  static const std::unordered_map<std::string_view, Method> table = {
      {"index", l_index}, {"count", l_count}, {"copy", copy}};
  return table;
}

const std::unordered_map<std::string_view, Method>& dict_methods() {
  static const std::unordered_map<std::string_view, Method> table = {
      {"get", d_get}, {"items", d_items}, {"keys", d_keys}, {"values", d_values}, {"copy", copy}};
  return table;
}

// The methods ImmutableSandboxedEnvironment refuses because they mutate the object.
bool is_mutating(const Value& receiver, std::string_view name) {
  static const std::unordered_set<std::string_view> list_mutators = {"append", "clear",  "extend",  "insert",
                                                                     "pop",    "remove", "reverse", "sort"};
  static const std::unordered_set<std::string_view> dict_mutators = {"clear", "pop", "popitem", "setdefault", "update"};
  if (receiver.is_list()) return receiver.seq_kind() == SeqKind::kList && list_mutators.count(name) > 0;
  return receiver.is_dict() && dict_mutators.count(name) > 0;
}

// ---- global functions ----

Value g_range(Interpreter& in, const CallArgs& args) {
  if (!args.keyword.empty()) raise("range() takes no keyword arguments");
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3) raise("range expected 1 to 3 arguments, got {}", p.size());
  int64_t start = 0, stop = 0, step = 1;
  if (p.size() == 1) {
    stop = require_int(p[0], "range() argument");
  } else {
    start = require_int(p[0], "range() argument");
    stop = require_int(p[1], "range() argument");
    if (p.size() == 3) step = require_int(p[2], "range() argument");
  }
  if (step == 0) raise("range() arg 3 must not be zero");
  const __int128 span = step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
  const __int128 abs_step = step > 0 ? static_cast<__int128>(step) : -static_cast<__int128>(step);
  const __int128 length = span <= 0 ? 0 : (span + abs_step - 1) / abs_step;
  // The sandbox's MAX_RANGE, which transformers' environment inherits.
  if (length > 100000) raise("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  in.meter().spend(static_cast<int64_t>(length));
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(length));
  for (int64_t i = 0; i < static_cast<int64_t>(length); ++i) items.push_back(Value::integer(start + i * step));
  return Value::sequence(
      std::move(items), SeqKind::kRange,
      step == 1 ? fmt::format("range({}, {})", start, stop) : fmt::format("range({}, {}, {})", start, stop, step));
}

// dict(mapping_or_pairs, **kwargs), also the contents of namespace(...).
Value build_dict(Interpreter& in, const CallArgs& args, const char* name) {
  if (args.positional.size() > 1) raise("{} expected at most 1 argument, got {}", name, args.positional.size());
  DictBuilder dict;
  if (!args.positional.empty()) {
    const Value& source = args.positional[0];
    if (source.is_dict()) {
      for (const auto& [key, value] : source.dict_data().entries) dict.set(key, value);
    } else {
      for (const Value& pair : in.iterate(source)) {
        const std::vector<Value> kv = in.iterate(pair);
        if (kv.size() != 2) raise("dictionary update sequence element has length {}; 2 is required", kv.size());
        dict.set(kv[0], kv[1]);
      }
    }
  }
  for (const auto& [key, value] : args.keyword) dict.set(Value::string(key), value);
  return dict.build();
}

Value g_dict(Interpreter& in, const CallArgs& args) { return build_dict(in, args, "dict"); }

Value g_namespace(Interpreter& in, const CallArgs& args) {
  const Value contents = build_dict(in, args, "namespace");
  std::shared_ptr<NamespaceData> ns = in.new_namespace();
  for (const auto& [key, value] : contents.dict_data().entries) {
    if (!key.is_string()) raise("namespace attribute names must be strings");
    ns->set(key.str(), value);
  }
  return Value::ns(std::move(ns));
}

Value g_raise_exception(Interpreter& in, const CallArgs& args) {
  BoundArgs a(args, "raise_exception", {"message"}, 1);
  throw TemplateError(to_str(a.get(0), in.meter()));
}

Value g_strftime_now(Interpreter& in, const CallArgs& args) {
  BoundArgs a(args, "strftime_now", {"format"}, 1);
  const std::string& format = require_str(a.get(0), "strftime_now() argument");
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  if (format.empty()) return Value::string("");
  for (size_t size = 256; size <= (1u << 16); size *= 4) {
    std::string buf(size, '\0');
    const size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &local);
    if (n > 0) {
      buf.resize(n);
      return in.make_string(std::move(buf));
    }
  }
  return Value::string("");
}

}  // namespace

std::optional<Value> find_method(const Value& receiver, std::string_view name) {
  const std::unordered_map<std::string_view, Method>* table = nullptr;
  if (receiver.is_string()) {
    table = &string_methods();
  } else if (receiver.is_list()) {
    if (receiver.seq_kind() > SeqKind::kRange) return std::nullopt;  // views: no methods templates use
    if (is_mutating(receiver, name))
      return Value::undefined(fmt::format("access to attribute '{}' of 'list' object is unsafe.", name));
    if (receiver.seq_kind() != SeqKind::kList && name == "copy") return std::nullopt;
    table = &list_methods();
  } else if (receiver.is_dict()) {
    if (is_mutating(receiver, name))
      return Value::undefined(fmt::format("access to attribute '{}' of 'dict' object is unsafe.", name));
    table = &dict_methods();
  } else {
    return std::nullopt;
  }
  const auto it = table->find(name);
  if (it == table->end()) return std::nullopt;
  const Method method = it->second;
  return make_function(
      fmt::format("<built-in method {} of {} object>", name, type_name(receiver)),
      [method, receiver](Interpreter& in, const CallArgs& args) { return method(in, receiver, args); });
}

std::optional<Value> python_attribute(const Value& obj, std::string_view name) {
  switch (obj.kind()) {
    case Value::Kind::String:
    case Value::Kind::List:
    case Value::Kind::Dict:
      return find_method(obj, name);
    case Value::Kind::Namespace:
      if (const Value* v = obj.ns_data().find(name)) return *v;
      return std::nullopt;
    case Value::Kind::Object:
      return obj.object().attribute(name);
    default:
      return std::nullopt;
  }
}

std::vector<std::pair<std::string, Value>> builtin_globals() {
  return {
      {"range", make_function("<class 'range'>", g_range)},
      {"dict", make_function("<class 'dict'>", g_dict)},
      {"namespace", make_function("<class 'jinja2.utils.Namespace'>", g_namespace)},
      {"raise_exception", make_function("<function raise_exception>", g_raise_exception)},
      {"strftime_now", make_function("<function strftime_now>", g_strftime_now)},
  };
}

}  // namespace fg::jinja
