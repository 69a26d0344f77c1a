// tokenizer/jinja_filters.cpp — jinja2's built-in filters, re-implemented from their documented
// behaviour, plus transformers' `tojson` override (json.dumps with ensure_ascii=False).
//
// Each filter takes the piped value and the call arguments bound by name as in jinja2's
// signatures. String filters convert their input with str() first (jinja2's soft_str), so
// `none|trim` is "None" and an undefined value reads as "". Filters that walk a sequence spend
// one step per item so that the step limit covers their work too.
#include "tokenizer/jinja_filters.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <unordered_map>

#include "tokenizer/jinja_interpreter.h"
#include "tokenizer/jinja_json.h"
#include "tokenizer/jinja_methods.h"
#include "tokenizer/jinja_operators.h"
#include "tokenizer/jinja_pystr.h"

namespace fg::jinja {

namespace {

using Items = std::vector<Value>;

std::string soft_str(Interpreter& in, const Value& v) { return to_str(v, in.meter()); }

// jinja2's make_attrgetter: "a.b.0" walks item lookups; integer parts index sequences.
Value get_path(Interpreter& in, const Value& item, const Value& attribute, const Value* fallback = nullptr) {
  if (attribute.is_integral()) return in.getitem(item, attribute);
  const std::string path = to_str(attribute, in.meter());
  Value current = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool numeric = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    current = numeric && part.size() < 18 ? in.getitem(current, Value::integer(std::stoll(part)))
                                          : in.getitem(current, Value::string(part));
    if (fallback && current.is_undefined()) current = *fallback;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return current;
}

// jinja2's ignore_case: strings compare lowercased unless case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(pystr::lower(v.str()));
  return v;
}

// jinja2's map/select/unique/items/batch/reverse return generators (see GeneratorObject).
// `prologue` runs on the first pull and says whether to iterate `input` at all; `step` turns
// each item into an output item, or skips it.
using ItemStep = std::function<std::optional<Value>(Interpreter&, const Value&)>;

Value lazy_over(std::string repr, Value input, std::function<bool(Interpreter&)> prologue, ItemStep step) {
  struct State {
    bool started = false;
    Items items;
    size_t pos = 0;
  };
  auto state = std::make_shared<State>();
  return Value::object(
      std::make_shared<GeneratorObject>(std::move(repr),
                                        [state, input = std::move(input), prologue = std::move(prologue),
                                         step = std::move(step)](Interpreter& in) -> std::optional<Value> {
                                          if (!state->started) {
                                            state->started = true;
                                            if (!prologue || prologue(in)) state->items = in.iterate(input);
                                          }
                                          while (state->pos < state->items.size()) {
                                            const Value item = state->items[state->pos++];
                                            if (std::optional<Value> out = step(in, item)) return out;
                                          }
                                          return std::nullopt;
                                        }));
}

// A generator whose items are all computed on the first pull.
Value lazy_list(std::string repr, std::function<Items(Interpreter&)> compute) {
  struct State {
    std::optional<Items> items;
    size_t pos = 0;
  };
  auto state = std::make_shared<State>();
  return Value::object(std::make_shared<GeneratorObject>(
      std::move(repr), [state, compute = std::move(compute)](Interpreter& in) -> std::optional<Value> {
        if (!state->items) state->items = compute(in);
        if (state->pos >= state->items->size()) return std::nullopt;
        return (*state->items)[state->pos++];
      }));
}

Value f_abs(Interpreter&, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "abs", {});
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_integral()) {
    if (v.as_int() == INT64_MIN) raise("integer overflow");
    return Value::integer(std::llabs(v.as_int()));
  }
  if (v.is_float()) return Value::number(std::fabs(v.as_double()));
  raise("bad operand type for abs(): '{}'", type_name(v));
}

Value f_attr(Interpreter& in, const Value& v, const CallArgs& args) {
  // Only a Python attribute counts here, never a dict key (jinja2's do_attr uses getattr()).
  BoundArgs a(args, "attr", {"name"}, 1);
  const std::string name = soft_str(in, a.get(0));
  if (v.is_undefined()) fail_undefined(v);
  std::optional<Value> found;
  if (v.is_string() || v.is_list() || v.is_dict()) {
    found = find_method(v, name);
  } else if (v.is_namespace()) {
    if (const Value* x = v.ns_data().find(name)) found = *x;
  } else if (v.is_object()) {
    found = v.object().attribute(name);
  }
  return found ? *found : Value::undefined(fmt::format("'{} object' has no attribute '{}'", type_name(v), name));
}

Value f_batch(Interpreter&, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "batch", {"linecount", "fill_with"}, 1);
  const int64_t n = a.get_int(0, 1);
  const Value fill = a.get(1);
  const bool filling = a.has(1) && !fill.is_none();
  return lazy_list("<generator object do_batch>", [v, n, fill, filling](Interpreter& in) {
    Items out, row;
    for (Value& item : in.iterate(v)) {
      if (static_cast<int64_t>(row.size()) == n) {
        out.push_back(Value::list(std::move(row)));
        row.clear();
      }
      row.push_back(std::move(item));
    }
    if (!row.empty()) {
      while (filling && static_cast<int64_t>(row.size()) < n) row.push_back(fill);
      out.push_back(Value::list(std::move(row)));
    }
    return out;
  });
}

Value f_capitalize(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "capitalize", {});
  return in.make_string(pystr::capitalize(soft_str(in, v)));
}

Value f_center(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "center", {"width"});
  const std::string s = soft_str(in, v);
  const int64_t width = a.get_int(0, 80), len = pystr::length(s);
  if (width <= len) return in.make_string(s);
  in.meter().check_size(static_cast<size_t>(width));
  const int64_t margin = width - len;
  const int64_t left = margin / 2 + (margin & width & 1);  // CPython's str.center rounding
  return in.make_string(std::string(static_cast<size_t>(left), ' ') + s +
                        std::string(static_cast<size_t>(margin - left), ' '));
}

Value f_default(Interpreter&, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "default", {"default_value", "boolean"});
  if (v.is_undefined() || (a.get_bool(1, false) && !truthy(v))) return a.get_or(0, Value::string(""));
  return v;
}

Value f_dictsort(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "dictsort", {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) raise("dictsort expects a mapping, got '{}'", type_name(v));
  const bool case_sensitive = a.get_bool(0, false), reverse = a.get_bool(2, false);
  const std::string by = a.get_str(1, "key");
  if (by != "key" && by != "value") raise("You can only sort by either 'key' or 'value'");
  const size_t pos = by == "key" ? 0 : 1;
  Items pairs;
  for (const auto& [key, value] : v.dict_data().entries) pairs.push_back(Value::list({key, value}, true));
  stable_sort_values(pairs, [&](const Value& x, const Value& y) {
    const Value kx = sort_key(x.items()[pos], case_sensitive), ky = sort_key(y.items()[pos], case_sensitive);
    return reverse ? less(ky, kx, in.meter()) : less(kx, ky, in.meter());
  });
  return Value::list(std::move(pairs));
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

Value f_escape(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "escape", {});
  return in.make_string(html_escape(soft_str(in, v)));
}

Value f_first(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "first", {});
  if (const GeneratorObject* gen = as_generator(v)) {  // next(iter(gen)) takes one item
    if (std::optional<Value> item = gen->next(in)) return *item;
    return Value::undefined("No first item, sequence was empty.");
  }
  if (v.is_list()) return v.items().empty() ? Value::undefined("No first item, sequence was empty.") : v.items()[0];
  Items items = in.iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items[0];
}

Value f_last(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "last", {});
  if (as_generator(v)) raise("'generator' object is not reversible");
  if (v.is_list()) return v.items().empty() ? Value::undefined("No last item, sequence was empty.") : v.items().back();
  Items items = in.iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value f_float(Interpreter&, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "float", {"default"});
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_number()) return Value::number(v.as_double());
  if (v.is_string())
    if (auto d = pystr::to_float(v.str())) return Value::number(*d);
  return a.get_or(0, Value::number(0.0));
}

Value f_int(Interpreter&, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "int", {"default", "base"});
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_integral()) return Value::integer(v.as_int());
  if (v.is_float()) {
    const double d = v.as_double();
    if (std::isnan(d)) return a.get_or(0, Value::integer(0));  // int(nan) is a ValueError
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) raise("cannot convert float {} to integer", py_float_repr(d));
    return Value::integer(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    if (auto i = pystr::to_int(v.str(), a.get_int(1, 10))) return Value::integer(*i);
    // jinja2's quirk: "42.23"|int is 42; here an infinite or huge value gives the default.
    if (auto d = pystr::to_float(v.str()); d && std::isfinite(*d) && std::fabs(*d) < 9.2e18)
      return Value::integer(static_cast<int64_t>(*d));
  }
  return a.get_or(0, Value::integer(0));
}

Value f_format(Interpreter& in, const Value& v, const CallArgs& args) {
  if (!args.keyword.empty() && !args.positional.empty())
    raise("can't handle positional and keyword arguments at the same time");
  if (!args.keyword.empty()) {
    DictBuilder kw;
    for (const auto& [name, value] : args.keyword) kw.set(Value::string(name), value);
    return in.make_string(percent_format(soft_str(in, v), kw.build(), in.meter()));
  }
  return in.make_string(percent_format(soft_str(in, v), Value::list(args.positional, true), in.meter()));
}

Value f_indent(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "indent", {"width", "first", "blank"});
  std::string indention;
  if (a.has(0) && a.get(0).is_string()) {
    indention = a.get(0).str();
  } else {
    const int64_t width = a.get_int(0, 4);
    if (width > 0) {
      in.meter().check_size(static_cast<size_t>(width));
      indention.assign(static_cast<size_t>(width), ' ');
    }
  }
  const bool first = a.get_bool(1, false), blank = a.get_bool(2, false);
  // jinja2 appends "\n" to the value itself, so anything but a string fails.
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_string()) raise("unsupported operand type(s) for +=: '{}' and 'str'", type_name(v));
  const std::vector<std::string> lines = pystr::splitlines(v.str() + "\n", false);
  in.meter().spend(static_cast<int64_t>(lines.size()));
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out.push_back('\n');
      if (blank || !lines[i].empty()) out += indention;
    }
    out += lines[i];
    in.meter().check_size(out.size());
  }
  if (first) out = indention + out;
  return in.make_string(std::move(out));
}

Value f_items(Interpreter&, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "items", {});
  return lazy_list("<generator object do_items>", [v](Interpreter&) {
    Items pairs;
    if (v.is_undefined()) return pairs;
    if (!v.is_dict()) raise("Can only get item pairs from a mapping.");
    for (const auto& [key, value] : v.dict_data().entries) pairs.push_back(Value::list({key, value}, true));
    return pairs;
  });
}

Value f_join(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "join", {"d", "attribute"});
  const std::string sep = a.has(0) ? soft_str(in, a.get(0)) : "";
  std::string out;
  bool first = true;
  for (const Value& item : in.iterate(v)) {
    if (!first) out += sep;
    first = false;
    append_str(out, a.has(1) && !a.get(1).is_none() ? get_path(in, item, a.get(1)) : item, in.meter());
    in.meter().check_size(out.size());
  }
  return in.make_string(std::move(out));
}

Value f_length(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "length", {});
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return Value::integer(0);
    case Value::Kind::String:
      in.meter().spend(static_cast<int64_t>(v.str().size() / 64));
      return Value::integer(pystr::length(v.str()));
    case Value::Kind::List:
      return Value::integer(static_cast<int64_t>(v.items().size()));
    case Value::Kind::Dict:
      return Value::integer(static_cast<int64_t>(v.dict_data().entries.size()));
    default:
      raise("object of type '{}' has no len()", type_name(v));
  }
}

Value f_list(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "list", {});
  return Value::list(in.iterate(v));
}

Value f_lower(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "lower", {});
  return in.make_string(pystr::lower(soft_str(in, v)));
}

Value f_upper(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "upper", {});
  return in.make_string(pystr::upper(soft_str(in, v)));
}

Value f_map(Interpreter&, const Value& v, const CallArgs& args) {
  // jinja2 checks its arguments only once the generator runs, and only for a true input.
  return lazy_over(
      "<generator object sync_do_map>", v,
      [v, args](Interpreter&) {
        if (!truthy(v)) return false;
        if (args.positional.empty()) {
          BoundArgs a(args, "map", {"attribute", "default"});
          if (!a.has(0)) raise("map requires a filter argument");
        }
        return true;
      },
      [args](Interpreter& in, const Value& item) -> std::optional<Value> {
        if (args.positional.empty()) {
          BoundArgs a(args, "map", {"attribute", "default"});
          const Value fallback = a.get(1);
          return get_path(in, item, a.get(0), a.has(1) ? &fallback : nullptr);
        }
        CallArgs rest;
        rest.positional.assign(args.positional.begin() + 1, args.positional.end());
        rest.keyword = args.keyword;
        return in.apply_filter(to_str(args.positional[0], in.meter()), item, rest);
      });
}

Value aggregate(Interpreter& in, const Value& v, const CallArgs& args, const char* name, bool want_max) {
  BoundArgs a(args, name, {"case_sensitive", "attribute"});
  const bool case_sensitive = a.get_bool(0, false);
  const Items items = in.iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& item) {
    return sort_key(a.has(1) && !a.get(1).is_none() ? get_path(in, item, a.get(1)) : item, case_sensitive);
  };
  size_t best = 0;
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    if (want_max ? less(best_key, k, in.meter()) : less(k, best_key, in.meter())) {
      best = i;
      best_key = std::move(k);
    }
  }
  return items[best];
}

Value f_max(Interpreter& in, const Value& v, const CallArgs& args) { return aggregate(in, v, args, "max", true); }
Value f_min(Interpreter& in, const Value& v, const CallArgs& args) { return aggregate(in, v, args, "min", false); }

// select/reject/selectattr/rejectattr share jinja2's select_or_reject, a generator.
Value select_or_reject(const Value& v, const CallArgs& args, bool keep_when, bool by_attribute) {
  auto prologue = [v, args, by_attribute](Interpreter&) {
    if (by_attribute && args.positional.empty()) raise("Missing parameter for attribute name");
    return truthy(v);
  };
  auto step = [args, keep_when, by_attribute](Interpreter& in, const Value& item) -> std::optional<Value> {
    const size_t off = by_attribute ? 1 : 0;
    const Value subject = by_attribute ? get_path(in, item, args.positional[0]) : item;
    bool result;
    if (args.positional.size() > off) {
      CallArgs test_args;
      test_args.positional.assign(args.positional.begin() + static_cast<ptrdiff_t>(off) + 1, args.positional.end());
      test_args.keyword = args.keyword;
      result = in.apply_test(to_str(args.positional[off], in.meter()), subject, test_args);
    } else {
      result = truthy(subject);
    }
    return result == keep_when ? std::optional<Value>(item) : std::nullopt;
  };
  return lazy_over("<generator object select_or_reject>", v, prologue, step);
}

Value f_select(Interpreter&, const Value& v, const CallArgs& a) { return select_or_reject(v, a, true, false); }
Value f_reject(Interpreter&, const Value& v, const CallArgs& a) { return select_or_reject(v, a, false, false); }
Value f_selectattr(Interpreter&, const Value& v, const CallArgs& a) { return select_or_reject(v, a, true, true); }
Value f_rejectattr(Interpreter&, const Value& v, const CallArgs& a) { return select_or_reject(v, a, false, true); }

Value f_replace(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "replace", {"old", "new", "count"}, 2);
  const std::string s = soft_str(in, v), old = soft_str(in, a.get(0)), with = soft_str(in, a.get(1));
  const int64_t count = a.has(2) && !a.get(2).is_none() ? a.get_int(2, -1) : -1;
  if (!with.empty()) {
    // Worst case every position is replaced; refuse before building something enormous.
    const size_t hits = old.empty() ? s.size() + 1 : s.size() / old.size();
    if (with.size() > old.size() && hits > 0 && (with.size() - old.size()) > in.meter().max_bytes() / hits)
      in.meter().check_size(s.size() + hits * (with.size() - old.size()));
  }
  in.meter().spend(static_cast<int64_t>(s.size() / 64));
  return in.make_string(pystr::replace(s, old, with, count));
}

Value f_reverse(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "reverse", {});
  if (v.is_string()) {
    std::u32string cps = pystr::decode(v.str());
    std::reverse(cps.begin(), cps.end());
    return in.make_string(pystr::encode(cps));
  }
  // reversed() gives an iterator for sequences and dicts; anything else is listed and reversed.
  const char* iterator = nullptr;
  if (v.is_undefined()) {
    iterator = "<reversed object>";
  } else if (v.is_dict()) {
    iterator = "<dict_reversekeyiterator object>";
  } else if (v.is_list()) {
    switch (v.seq_kind()) {
      case SeqKind::kList:
        iterator = "<list_reverseiterator object>";
        break;
      case SeqKind::kRange:
        iterator = "<range_iterator object>";
        break;
      case SeqKind::kTuple:
        iterator = "<reversed object>";
        break;
      default:
        iterator = "<dict_reverseiterator object>";
    }
  }
  if (iterator) {
    return lazy_list(iterator, [v](Interpreter& in) {
      Items items = in.iterate(v);
      std::reverse(items.begin(), items.end());
      return items;
    });
  }
  Items items = in.iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value f_round(Interpreter&, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "round", {"precision", "method"});
  const int64_t precision = a.get_int(0, 0);
  const std::string method = a.get_str(1, "common");
  if (method != "common" && method != "ceil" && method != "floor") raise("method must be common, ceil or floor");
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_number()) raise("type {} doesn't define __round__ method", type_name(v));
  if (method == "common") {
    if (v.is_integral()) {  // round(int, n) stays an int; negative n rounds half to even
      const int64_t x = v.as_int();
      if (precision >= 0) return Value::integer(x);
      if (precision < -18) return Value::integer(0);
      int64_t p = 1;
      for (int64_t k = 0; k < -precision; ++k) p *= 10;
      int64_t q = x / p, r = x % p;
      if (r < 0) r += p, --q;
      if (2 * r > p || (2 * r == p && (q & 1))) ++q;
      int64_t result = 0;
      if (__builtin_mul_overflow(q, p, &result)) raise("integer overflow");
      return Value::integer(result);
    }
    const double x = v.as_double();
    if (!std::isfinite(x)) return Value::number(x);
    if (precision > 300) return Value::number(x);
    if (precision < -308) return Value::number(0.0 * x);
    // Python rounds the exact binary value half-to-even in decimal; printf does the same.
    if (precision >= 0) {
      char buf[1024];
      std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(precision), x);
      return Value::number(std::strtod(buf, nullptr));
    }
    const double scale = std::pow(10.0, static_cast<double>(-precision));
    return Value::number(std::nearbyint(x / scale) * scale);
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double scaled = v.as_double() * scale;
  return Value::number((method == "ceil" ? std::ceil(scaled) : std::floor(scaled)) / scale);
}

Value f_safe(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "safe", {});
  return in.make_string(soft_str(in, v));  // no autoescaping, so markup is just text
}

Value f_sort(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "sort", {"reverse", "case_sensitive", "attribute"});
  const bool reverse = a.get_bool(0, false), case_sensitive = a.get_bool(1, false);
  std::vector<Value> attributes;
  if (a.has(2) && !a.get(2).is_none()) {
    if (a.get(2).is_string()) {
      for (const std::string& part : pystr::split(a.get(2).str(), std::string(","), -1))
        attributes.push_back(Value::string(pystr::strip(part, std::nullopt, true, true)));
    } else {
      attributes.push_back(a.get(2));
    }
  }
  Items items = in.iterate(v);
  auto key = [&](const Value& item) {
    if (attributes.empty()) return sort_key(item, case_sensitive);
    if (attributes.size() == 1) return sort_key(get_path(in, item, attributes[0]), case_sensitive);
    Items parts;
    for (const Value& attr : attributes) parts.push_back(sort_key(get_path(in, item, attr), case_sensitive));
    return Value::list(std::move(parts), true);
  };
  Items keyed;  // (key, item) so that each key is computed once, as sorted(key=...) does
  for (Value& item : items) keyed.push_back(Value::list({key(item), item}, true));
  stable_sort_values(keyed, [&](const Value& x, const Value& y) {
    return reverse ? less(y.items()[0], x.items()[0], in.meter()) : less(x.items()[0], y.items()[0], in.meter());
  });
  Items out;
  for (const Value& k : keyed) out.push_back(k.items()[1]);
  return Value::list(std::move(out));
}

Value f_string(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "string", {});
  return v.is_string() ? v : in.make_string(soft_str(in, v));
}

Value f_sum(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "sum", {"attribute", "start"});
  Value total = a.get_or(1, Value::integer(0));
  for (const Value& item : in.iterate(v))
    total = binary_op(BinaryOp::kAdd, total, a.has(0) && !a.get(0).is_none() ? get_path(in, item, a.get(0)) : item,
                      in.meter());
  return total;
}

Value f_title(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "title", {});
  // jinja2 splits on runs of `-`, whitespace and opening brackets and capitalises each word's
  // first character (upper, not title case), lowering the rest.
  const std::u32string s = pystr::decode(soft_str(in, v));
  auto separator = [](char32_t c) {
    return c == U'-' || c == U'(' || c == U'{' || c == U'[' || c == U'<' || pystr::is_space(c);
  };
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    const bool sep = separator(s[i]);
    while (j < s.size() && separator(s[j]) == sep) ++j;
    const std::string part = pystr::encode(std::u32string_view(s).substr(i, j - i));
    if (sep) {
      out += part;
    } else {
      std::string head;
      pystr::append_utf8(head, s[i]);
      out += pystr::upper(head) + pystr::lower(pystr::encode(std::u32string_view(s).substr(i + 1, j - i - 1)));
    }
    i = j;
  }
  return in.make_string(std::move(out));
}

Value f_tojson(Interpreter& in, const Value& v, const CallArgs& args) {
  // transformers: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  BoundArgs a(args, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonStyle style;
  style.ensure_ascii = a.get_bool(0, false);
  style.sort_keys = a.get_bool(3, false);
  if (a.has(1) && !a.get(1).is_none()) {
    const Value& indent = a.get(1);
    if (indent.is_string()) {
      style.indent = indent.str();
    } else {
      const int64_t n = require_int(indent, "tojson() argument 'indent'");
      if (n > 1024) raise("tojson() indent too large");
      style.indent = std::string(static_cast<size_t>(std::max<int64_t>(n, 0)), ' ');
    }
    style.item_separator = ",";
  }
  if (a.has(2) && !a.get(2).is_none()) {
    const Value& seps = a.get(2);
    if (!seps.is_list() || seps.items().size() != 2) raise("tojson() separators must be a pair of strings");
    style.item_separator = require_str(seps.items()[0], "tojson() item separator");
    style.key_separator = require_str(seps.items()[1], "tojson() key separator");
  }
  std::string out;
  write_json(out, v, style, in.meter());
  return in.make_string(std::move(out));
}

Value f_trim(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "trim", {"chars"});
  std::optional<std::string> chars;
  if (a.has(0) && !a.get(0).is_none()) chars = require_str(a.get(0), "trim() argument 'chars'");
  return in.make_string(pystr::strip(soft_str(in, v), chars, true, true));
}

Value f_unique(Interpreter&, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "unique", {"case_sensitive", "attribute"});
  const bool case_sensitive = a.get_bool(0, false);
  const Value attribute = a.get(1);
  const bool by_attribute = a.has(1) && !attribute.is_none();
  auto seen = std::make_shared<Items>();
  return lazy_over(
      "<generator object sync_do_unique>", v, nullptr,
      [seen, case_sensitive, attribute, by_attribute](Interpreter& in, const Value& item) -> std::optional<Value> {
        Value key = sort_key(by_attribute ? get_path(in, item, attribute) : item, case_sensitive);
        require_hashable(key);
        for (const Value& s : *seen)
          if (equals(s, key, in.meter())) return std::nullopt;
        seen->push_back(std::move(key));
        return item;
      });
}

Value f_wordcount(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "wordcount", {});
  int64_t words = 0;
  bool in_word = false;
  for (char32_t c : pystr::decode(soft_str(in, v))) {
    const bool word_char = c == U'_' || pystr::is_alnum(c);
    if (word_char && !in_word) ++words;
    in_word = word_char;
  }
  return Value::integer(words);
}

Value f_unsupported(Interpreter&, const Value&, const CallArgs&) {
  raise("this filter is not supported in chat templates");
}

}  // namespace

FilterFn find_filter(std::string_view name) {
  static const std::unordered_map<std::string_view, FilterFn> table = {
      {"abs", f_abs},
      {"attr", f_attr},
      {"batch", f_batch},
      {"capitalize", f_capitalize},
      {"center", f_center},
      {"count", f_length},
      {"d", f_default},
      {"default", f_default},
      {"dictsort", f_dictsort},
      {"e", f_escape},
      {"escape", f_escape},
      {"first", f_first},
      {"float", f_float},
      {"forceescape", f_escape},
      {"format", f_format},
      {"indent", f_indent},
      {"int", f_int},
      {"items", f_items},
      {"join", f_join},
      {"last", f_last},
      {"length", f_length},
      {"list", f_list},
      {"lower", f_lower},
      {"map", f_map},
      {"max", f_max},
      {"min", f_min},
      {"reject", f_reject},
      {"rejectattr", f_rejectattr},
      {"replace", f_replace},
      {"reverse", f_reverse},
      {"round", f_round},
      {"safe", f_safe},
      {"select", f_select},
      {"selectattr", f_selectattr},
      {"sort", f_sort},
      {"string", f_string},
      {"sum", f_sum},
      {"title", f_title},
      {"tojson", f_tojson},
      {"trim", f_trim},
      {"unique", f_unique},
      {"upper", f_upper},
      {"wordcount", f_wordcount},
      // jinja2 has these; chat templates do not use them.
      {"filesizeformat", f_unsupported},
      {"groupby", f_unsupported},
      {"pprint", f_unsupported},
      {"random", f_unsupported},
      {"slice", f_unsupported},
      {"striptags", f_unsupported},
      {"truncate", f_unsupported},
      {"urlencode", f_unsupported},
      {"urlize", f_unsupported},
      {"wordwrap", f_unsupported},
      {"xmlattr", f_unsupported},
  };
  const auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace fg::jinja
