// tokenizer/jinja_is_tests.cpp — jinja2's built-in tests (`x is defined`, `n is divisibleby 3`).
//
// Type tests follow Python's isinstance checks as jinja2 writes them: a bool is a number but
// not an integer, an undefined value is iterable and a sequence (it has __iter__, __len__ and
// __getitem__), a string is iterable and a sequence but not a mapping.
#include "tokenizer/jinja_is_tests.h"

#include <unordered_map>

#include "tokenizer/jinja_filters.h"
#include "tokenizer/jinja_interpreter.h"
#include "tokenizer/jinja_operators.h"
#include "tokenizer/jinja_pystr.h"

namespace fg::jinja {

namespace {

#define FG_JINJA_TYPE_TEST(fn, name, expr)                      \
  bool fn(Interpreter&, const Value& v, const CallArgs& args) { \
    BoundArgs a(args, name, {});                                \
    return expr;                                                \
  }

FG_JINJA_TYPE_TEST(t_defined, "defined", !v.is_undefined())
FG_JINJA_TYPE_TEST(t_undefined, "undefined", v.is_undefined())
FG_JINJA_TYPE_TEST(t_none, "none", v.is_none())
FG_JINJA_TYPE_TEST(t_boolean, "boolean", v.is_bool())
FG_JINJA_TYPE_TEST(t_true, "true", v.is_bool() && v.as_bool())
FG_JINJA_TYPE_TEST(t_false, "false", v.is_bool() && !v.as_bool())
FG_JINJA_TYPE_TEST(t_integer, "integer", v.is_int())
FG_JINJA_TYPE_TEST(t_float, "float", v.is_float())
FG_JINJA_TYPE_TEST(t_number, "number", v.is_number())
FG_JINJA_TYPE_TEST(t_string, "string", v.is_string())
FG_JINJA_TYPE_TEST(t_mapping, "mapping", v.is_dict())
FG_JINJA_TYPE_TEST(t_iterable, "iterable",
                   v.is_undefined() || v.is_string() || v.is_list() || v.is_dict() || as_generator(v))
// A sequence has len() and [] (so dict views, having no [], are not one).
FG_JINJA_TYPE_TEST(t_sequence, "sequence",
                   v.is_undefined() || v.is_string() || (v.is_list() && v.seq_kind() <= SeqKind::kRange) || v.is_dict())
FG_JINJA_TYPE_TEST(t_callable, "callable", v.is_object() && v.object().callable())
FG_JINJA_TYPE_TEST(t_escaped, "escaped", (static_cast<void>(v), false))  // no Markup without autoescaping

#undef FG_JINJA_TYPE_TEST

bool remainder_is(Interpreter& in, const Value& v, const Value& divisor, int64_t expected) {
  const Value r = binary_op(BinaryOp::kMod, v, divisor, in.meter());
  return equals(r, Value::integer(expected), in.meter());
}

bool t_odd(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "odd", {});
  return remainder_is(in, v, Value::integer(2), 1);
}

bool t_even(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "even", {});
  return remainder_is(in, v, Value::integer(2), 0);
}

bool t_divisibleby(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "divisibleby", {"num"}, 1);
  return remainder_is(in, v, a.get(0), 0);
}

template <CompareOp op>
bool t_compare(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "comparison", {"other"}, 1);
  return compare(op, v, a.get(0), in.meter());
}

bool t_in(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "in", {"seq"}, 1);
  if (const GeneratorObject* gen = as_generator(a.get(0))) {  // consumed up to the first match
    while (std::optional<Value> item = gen->next(in))
      if (equals(*item, v, in.meter())) return true;
    return false;
  }
  return contains(a.get(0), v, in.meter());
}

bool t_sameas(Interpreter&, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "sameas", {"other"}, 1);
  const Value& o = a.get(0);
  if (v.kind() != o.kind()) return false;
  switch (v.kind()) {
    case Value::Kind::None:
      return true;
    case Value::Kind::Bool:
      return v.as_bool() == o.as_bool();
    case Value::Kind::Int:  // CPython shares the objects of small integers only
      return v.as_int() == o.as_int() && v.as_int() >= -5 && v.as_int() <= 256;
    default:
      return v.identity() != nullptr && v.identity() == o.identity();
  }
}

bool t_lower(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "lower", {});
  return pystr::is_lower(to_str(v, in.meter()));
}

bool t_upper(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "upper", {});
  return pystr::is_upper(to_str(v, in.meter()));
}

bool t_filter(Interpreter&, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "filter", {});
  return v.is_string() && find_filter(v.str()) != nullptr;
}

bool t_test(Interpreter&, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "test", {});
  return v.is_string() && find_test(v.str()) != nullptr;
}

}  // namespace

TestFn find_test(std::string_view name) {
  static const std::unordered_map<std::string_view, TestFn> table = {
      {"boolean", t_boolean},
      {"callable", t_callable},
      {"defined", t_defined},
      {"divisibleby", t_divisibleby},
      {"eq", t_compare<CompareOp::kEq>},
      {"equalto", t_compare<CompareOp::kEq>},
      {"==", t_compare<CompareOp::kEq>},
      {"escaped", t_escaped},
      {"even", t_even},
      {"false", t_false},
      {"filter", t_filter},
      {"float", t_float},
      {"ge", t_compare<CompareOp::kGe>},
      {">=", t_compare<CompareOp::kGe>},
      {"gt", t_compare<CompareOp::kGt>},
      {"greaterthan", t_compare<CompareOp::kGt>},
      {">", t_compare<CompareOp::kGt>},
      {"in", t_in},
      {"integer", t_integer},
      {"iterable", t_iterable},
      {"le", t_compare<CompareOp::kLe>},
      {"<=", t_compare<CompareOp::kLe>},
      {"lower", t_lower},
      {"lt", t_compare<CompareOp::kLt>},
      {"lessthan", t_compare<CompareOp::kLt>},
      {"<", t_compare<CompareOp::kLt>},
      {"mapping", t_mapping},
      {"ne", t_compare<CompareOp::kNe>},
      {"!=", t_compare<CompareOp::kNe>},
      {"none", t_none},
      {"number", t_number},
      {"odd", t_odd},
      {"sameas", t_sameas},
      {"sequence", t_sequence},
      {"string", t_string},
      {"test", t_test},
      {"true", t_true},
      {"undefined", t_undefined},
      {"upper", t_upper},
  };
  const auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace fg::jinja
