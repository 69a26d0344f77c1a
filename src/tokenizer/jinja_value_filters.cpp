// tokenizer/jinja_value_filters.cpp — jinja2's filters on a single value: the numeric ones (abs,
// int, float, round), default and attr, plus transformers' `tojson` override (json.dumps with
// ensure_ascii=False).
//
// int and float give their `default` argument where jinja2 catches Python's ValueError; an
// undefined input fails, as using an undefined value does anywhere.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "tokenizer/jinja_filter_families.h"
#include "tokenizer/jinja_interpreter.h"
#include "tokenizer/jinja_json.h"
#include "tokenizer/jinja_methods.h"
#include "tokenizer/jinja_pystr.h"

namespace fg::jinja {

namespace {

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
  const std::optional<Value> found = python_attribute(v, name);
  return found ? *found : Value::undefined(fmt::format("'{} object' has no attribute '{}'", type_name(v), name));
}

Value f_default(Interpreter&, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "default", {"default_value", "boolean"});
  if (v.is_undefined() || (a.get_bool(1, false) && !truthy(v))) return a.get_or(0, Value::string(""));
  return v;
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
    // Built then moved: GCC 12 at -O3 mistakes assigning the literal in place for an
    // overlapping copy (-Wrestrict, GCC bug 105329) once this function sits in a small file.
    style.item_separator = std::string(",");
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

}  // namespace

std::span<const NamedFilter> value_filters() {
  static constexpr NamedFilter kFilters[] = {
      {"abs", f_abs},     {"attr", f_attr}, {"d", f_default},   {"default", f_default},
      {"float", f_float}, {"int", f_int},   {"round", f_round}, {"tojson", f_tojson},
  };
  return kFilters;
}

}  // namespace fg::jinja
