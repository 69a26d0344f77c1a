// tokenizer/jinja_operators.cpp — Python operator semantics on values (see jinja_operators.h).
#include "tokenizer/jinja_operators.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "tokenizer/jinja_pystr.h"

namespace fg::jinja {

namespace {

[[noreturn]] void unsupported(const char* op, const Value& a, const Value& b) {
  raise("unsupported operand type(s) for {}: '{}' and '{}'", op, type_name(a), type_name(b));
}

// The result of a __builtin_*_overflow call, or an error when it overflowed.
template <typename Op>
int64_t checked(Op op) {
  int64_t result = 0;
  if (op(&result)) raise("integer overflow");
  return result;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) raise("integer division or modulo by zero");
  if (a == INT64_MIN && b == -1) raise("integer overflow");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  if (b == 0) raise("integer division or modulo by zero");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// CPython's float_divmod: the floor quotient and the remainder with the divisor's sign.
std::pair<double, double> float_divmod(double vx, double wx) {
  if (wx == 0.0) raise("float division by zero");
  double mod = std::fmod(vx, wx);
  double div = (vx - mod) / wx;
  if (mod != 0.0) {
    if ((wx < 0) != (mod < 0)) {
      mod += wx;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, wx);
  }
  double floordiv;
  if (div != 0.0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, vx / wx);
  }
  return {floordiv, mod};
}

Value repeat(const Value& seq, int64_t times, Meter& meter) {
  if (times < 0) times = 0;
  const auto n = static_cast<size_t>(times);
  if (seq.is_string()) {
    const std::string& s = seq.str();
    if (!s.empty() && n > meter.max_bytes() / s.size()) meter.check_size(meter.max_bytes() + 1);
    meter.spend(static_cast<int64_t>(s.size() * n / 64));
    std::string out;
    out.reserve(s.size() * n);
    for (size_t i = 0; i < n; ++i) out += s;
    return Value::string(std::move(out));
  }
  const auto& items = seq.items();
  if (!items.empty() && n > meter.max_bytes() / items.size()) meter.check_size(meter.max_bytes() + 1);
  meter.spend(static_cast<int64_t>(items.size() * n));
  std::vector<Value> out;
  out.reserve(items.size() * n);
  for (size_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out), seq.is_tuple());
}

Value int_pow(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 0) raise("0.0 cannot be raised to a negative power");
    return Value::number(std::pow(static_cast<double>(base), static_cast<double>(exp)));
  }
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) result = checked([&](int64_t* r) { return __builtin_mul_overflow(result, base, r); });
    exp >>= 1;
    if (exp > 0) base = checked([&](int64_t* r) { return __builtin_mul_overflow(base, base, r); });
  }
  return Value::integer(result);
}

// ---- printf-style formatting ----

struct Spec {
  std::string flags;
  int width = -1;
  int precision = -1;
  char type = 's';
};

std::string pad(std::string text, int width, bool left) {
  const int64_t len = pystr::length(text);
  if (width > len) {
    const std::string fill(static_cast<size_t>(width - len), ' ');
    text = left ? text + fill : fill + text;
  }
  return text;
}

std::string format_number(const Value& v, const Spec& spec) {
  std::string cfmt = fmt::format("%{}", spec.flags);
  if (spec.width >= 0) cfmt += fmt::format("{}", spec.width);
  if (spec.precision >= 0) cfmt += fmt::format(".{}", spec.precision);
  char buf[512];
  switch (spec.type) {
    case 'd':
    case 'i':
    case 'u':
    case 'x':
    case 'X':
    case 'o': {
      if (!v.is_number()) raise("%{} format: a real number is required, not {}", spec.type, type_name(v));
      int64_t i;
      if (v.is_float()) {
        const double d = v.as_double();
        if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) raise("cannot convert float {} to integer", d);
        i = static_cast<int64_t>(d);
      } else {
        i = v.as_int();
      }
      const char t = spec.type == 'i' || spec.type == 'u' ? 'd' : spec.type;
      cfmt += "ll";
      cfmt.push_back(t);
      std::snprintf(buf, sizeof(buf), cfmt.c_str(), static_cast<long long>(i));
      return buf;
    }
    default: {
      if (!v.is_number()) raise("must be real number, not {}", type_name(v));
      cfmt.push_back(spec.type);
      std::snprintf(buf, sizeof(buf), cfmt.c_str(), v.as_double());
      return buf;
    }
  }
}

std::string format_value(const Value& v, const Spec& spec, Meter& meter) {
  switch (spec.type) {
    case 's':
    case 'r':
    case 'a': {
      std::string text;
      if (spec.type == 's') {
        text = to_str(v, meter);
      } else {
        append_repr(text, v, meter);
      }
      if (spec.precision >= 0) {
        const std::u32string cps = pystr::decode(text);
        if (static_cast<size_t>(spec.precision) < cps.size())
          text = pystr::encode(std::u32string_view(cps).substr(0, static_cast<size_t>(spec.precision)));
      }
      return pad(std::move(text), spec.width, spec.flags.find('-') != std::string::npos);
    }
    case 'd':
    case 'i':
    case 'u':
    case 'x':
    case 'X':
    case 'o':
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G':
      if (spec.width > 256 || spec.precision > 256) raise("format width or precision too large");
      return format_number(v, spec);
    default:
      raise("unsupported format character '{}'", spec.type);
  }
}

int parse_count(const std::string& f, size_t& i) {
  int n = 0;
  while (i < f.size() && f[i] >= '0' && f[i] <= '9') {
    n = n * 10 + (f[i++] - '0');
    if (n > 100000) raise("format width or precision too large");
  }
  return n;
}

}  // namespace

Value negate(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_integral()) {
    if (v.as_int() == INT64_MIN) raise("integer overflow");
    return Value::integer(-v.as_int());
  }
  if (v.is_float()) return Value::number(-v.as_double());
  raise("bad operand type for unary -: '{}'", type_name(v));
}

Value unary_plus(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_integral()) return Value::integer(v.as_int());
  if (v.is_float()) return v;
  raise("bad operand type for unary +: '{}'", type_name(v));
}

Value binary_op(BinaryOp op, const Value& a, const Value& b, Meter& meter) {
  if (a.is_undefined()) fail_undefined(a);
  // str % x formats; Python treats an undefined x like a mapping and prints it as "".
  if (op == BinaryOp::kMod && a.is_string()) return Value::string(percent_format(a.str(), b, meter));
  if (b.is_undefined()) fail_undefined(b);
  const bool ints = a.is_integral() && b.is_integral();
  const bool nums = a.is_number() && b.is_number();
  const int64_t x = a.is_integral() ? a.as_int() : 0, y = b.is_integral() ? b.as_int() : 0;
  switch (op) {
    case BinaryOp::kAdd:
      if (ints) return Value::integer(checked([&](int64_t* r) { return __builtin_add_overflow(x, y, r); }));
      if (nums) return Value::number(a.as_double() + b.as_double());
      if (a.is_string() && b.is_string()) {
        meter.check_size(a.str().size() + b.str().size());
        meter.spend(static_cast<int64_t>((a.str().size() + b.str().size()) / 64));
        return Value::string(a.str() + b.str());
      }
      if (a.is_plain_sequence() && b.is_plain_sequence() && a.is_tuple() == b.is_tuple()) {
        meter.spend(static_cast<int64_t>(a.items().size() + b.items().size()));
        std::vector<Value> items = a.items();
        items.insert(items.end(), b.items().begin(), b.items().end());
        return Value::list(std::move(items), a.is_tuple());
      }
      unsupported("+", a, b);
    case BinaryOp::kSub:
      if (ints) return Value::integer(checked([&](int64_t* r) { return __builtin_sub_overflow(x, y, r); }));
      if (nums) return Value::number(a.as_double() - b.as_double());
      unsupported("-", a, b);
    case BinaryOp::kMul:
      if (ints) return Value::integer(checked([&](int64_t* r) { return __builtin_mul_overflow(x, y, r); }));
      if (nums) return Value::number(a.as_double() * b.as_double());
      if ((a.is_string() || a.is_plain_sequence()) && b.is_integral()) return repeat(a, b.as_int(), meter);
      if (a.is_integral() && (b.is_string() || b.is_plain_sequence())) return repeat(b, a.as_int(), meter);
      unsupported("*", a, b);
    case BinaryOp::kDiv:
      if (nums) {
        if (b.as_double() == 0.0) raise("division by zero");
        return Value::number(a.as_double() / b.as_double());
      }
      unsupported("/", a, b);
    case BinaryOp::kFloorDiv:
      if (ints) return Value::integer(floor_div(a.as_int(), b.as_int()));
      if (nums) return Value::number(float_divmod(a.as_double(), b.as_double()).first);
      unsupported("//", a, b);
    case BinaryOp::kMod:
      if (ints) return Value::integer(floor_mod(a.as_int(), b.as_int()));
      if (nums) return Value::number(float_divmod(a.as_double(), b.as_double()).second);
      if (a.is_string()) return Value::string(percent_format(a.str(), b, meter));
      unsupported("%", a, b);
    case BinaryOp::kPow:
      if (ints) return int_pow(a.as_int(), b.as_int());
      if (nums) {
        const double x = a.as_double(), y = b.as_double();
        if (x == 0.0 && y < 0) raise("0.0 cannot be raised to a negative power");
        if (x < 0 && y != std::floor(y)) raise("a negative number cannot be raised to a fractional power");
        const double result = std::pow(x, y);
        if (std::isinf(result) && std::isfinite(x) && std::isfinite(y)) raise("numerical result out of range");
        return Value::number(result);
      }
      unsupported("** or pow()", a, b);
  }
  raise("unknown operator");
}

bool contains(const Value& container, const Value& item, Meter& meter) {
  switch (container.kind()) {
    case Value::Kind::Undefined:
      return false;  // iterating an undefined value yields nothing
    case Value::Kind::String:
      if (item.is_undefined()) fail_undefined(item);
      if (!item.is_string()) raise("'in <string>' requires string as left operand, not {}", type_name(item));
      meter.spend(static_cast<int64_t>(container.str().size() / 64));
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::List:
      for (const Value& v : container.items())
        if (equals(v, item, meter)) return true;
      return false;
    case Value::Kind::Dict:
      require_hashable(item);
      return container.dict_data().find(item) != nullptr;
    default:
      raise("argument of type '{}' is not iterable", type_name(container));
  }
}

bool compare(CompareOp op, const Value& a, const Value& b, Meter& meter) {
  switch (op) {
    case CompareOp::kEq:
      return equals(a, b, meter);
    case CompareOp::kNe:
      return !equals(a, b, meter);
    case CompareOp::kLt:
      return ordered(a, Order::kLt, b, meter);
    case CompareOp::kLe:
      return ordered(a, Order::kLe, b, meter);
    case CompareOp::kGt:
      return ordered(a, Order::kGt, b, meter);
    case CompareOp::kGe:
      return ordered(a, Order::kGe, b, meter);
    case CompareOp::kIn:
      return contains(b, a, meter);
    case CompareOp::kNotIn:
      return !contains(b, a, meter);
  }
  return false;
}

std::string percent_format(const std::string& f, const Value& args, Meter& meter) {
  // A tuple spreads into the conversions; anything else is a single argument, and a dict
  // may also be looked up by %(name)s.
  std::vector<Value> positional;
  if (args.is_list() && args.is_tuple()) {
    positional = args.items();
  } else {
    positional.push_back(args);
  }
  const Value* mapping = args.is_dict() || args.is_undefined() ? &args : nullptr;
  size_t next = 0;
  bool used_mapping = false;
  std::string out;
  for (size_t i = 0; i < f.size();) {
    if (f[i] != '%') {
      out.push_back(f[i++]);
      continue;
    }
    ++i;
    if (i >= f.size()) raise("incomplete format");
    if (f[i] == '%') {
      out.push_back('%');
      ++i;
      continue;
    }
    const Value* arg = nullptr;
    if (f[i] == '(') {
      if (!mapping) raise("format requires a mapping");
      const size_t close = f.find(')', i);
      if (close == std::string::npos) raise("incomplete format key");
      if (mapping->is_undefined()) fail_undefined(*mapping);
      arg = mapping->dict_data().find(std::string_view(f).substr(i + 1, close - i - 1));
      if (!arg) raise("KeyError: '{}'", f.substr(i + 1, close - i - 1));
      used_mapping = true;
      i = close + 1;
    }
    Spec spec;
    while (i < f.size() && std::string_view("-+ #0").find(f[i]) != std::string_view::npos) spec.flags += f[i++];
    if (i < f.size() && f[i] == '*') raise("'*' width is not supported in chat templates");
    if (i < f.size() && f[i] >= '0' && f[i] <= '9') spec.width = parse_count(f, i);
    if (i < f.size() && f[i] == '.') {
      ++i;
      spec.precision = parse_count(f, i);
    }
    while (i < f.size() && (f[i] == 'l' || f[i] == 'h' || f[i] == 'L')) ++i;
    if (i >= f.size()) raise("incomplete format");
    spec.type = f[i++];
    if (!arg) {
      if (next >= positional.size()) raise("not enough arguments for format string");
      arg = &positional[next++];
    }
    out += format_value(*arg, spec, meter);
    meter.check_size(out.size());
  }
  if (!used_mapping && !mapping && next < positional.size())
    raise("not all arguments converted during string formatting");
  return out;
}

std::string brace_format(const std::string& f, const std::vector<Value>& args,
                         const std::vector<std::pair<std::string, Value>>& kwargs, Meter& meter) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < f.size();) {
    const char c = f[i];
    if (c == '}') {
      if (i + 1 < f.size() && f[i + 1] == '}') {
        out.push_back('}');
        i += 2;
        continue;
      }
      raise("Single '}}' encountered in format string");
    }
    if (c != '{') {
      out.push_back(c);
      ++i;
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '{') {
      out.push_back('{');
      i += 2;
      continue;
    }
    const size_t close = f.find('}', i);
    if (close == std::string::npos) raise("Single '{{' encountered in format string");
    std::string field = f.substr(i + 1, close - i - 1);
    i = close + 1;
    std::string spec_text;
    if (const size_t colon = field.find(':'); colon != std::string::npos) {
      spec_text = field.substr(colon + 1);
      field.resize(colon);
    }
    char conversion = 's';
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      conversion = bang + 1 < field.size() ? field[bang + 1] : 's';
      field.resize(bang);
    }
    if (field.find_first_of(".[") != std::string::npos) raise("nested format fields are not supported");
    const Value* arg = nullptr;
    if (field.empty() || (field[0] >= '0' && field[0] <= '9')) {
      size_t pos = 0;
      const size_t index = field.empty() ? auto_index++ : static_cast<size_t>(parse_count(field, pos));
      if (index >= args.size()) raise("Replacement index {} out of range for positional args tuple", index);
      arg = &args[index];
    } else {
      for (const auto& [name, value] : kwargs)
        if (name == field) arg = &value;
      if (!arg) raise("KeyError: '{}'", field);
    }
    Spec spec;
    size_t k = 0;
    bool left = false, has_align = false;
    if (spec_text.size() >= 2 && std::string_view("<>^").find(spec_text[1]) != std::string_view::npos)
      raise("fill characters in format specs are not supported");
    if (!spec_text.empty() && (spec_text[0] == '<' || spec_text[0] == '>')) {
      left = spec_text[0] == '<';
      has_align = true;
      ++k;
    }
    while (k < spec_text.size() && (spec_text[k] == '+' || spec_text[k] == ' ' || spec_text[k] == '0'))
      spec.flags += spec_text[k++];
    if (k < spec_text.size() && spec_text[k] >= '0' && spec_text[k] <= '9') spec.width = parse_count(spec_text, k);
    if (k < spec_text.size() && spec_text[k] == '.') {
      ++k;
      spec.precision = parse_count(spec_text, k);
    }
    char type = k < spec_text.size() ? spec_text[k++] : '\0';
    if (k != spec_text.size()) raise("unsupported format spec '{}'", spec_text);
    if (type == '\0') {
      // No type: str() for strings and for numbers without a precision, like Python.
      if (arg->is_number() && spec.precision >= 0) raise("unsupported format spec '{}'", spec_text);
      type = conversion == 'r' ? 'r' : 's';
    }
    if (!has_align) left = !arg->is_number();  // Python aligns numbers right, text left
    if (left) spec.flags += '-';
    out += format_value(*arg, spec, meter);
    meter.check_size(out.size());
  }
  return out;
}

}  // namespace fg::jinja
