// tokenizer/jinja_operators.h — Python's operators on template values.
//
// Arithmetic follows Python: `/` always gives a float, `//` and `%` floor toward negative
// infinity, `+` concatenates strings and lists, `*` repeats them, `in` tests substrings, list
// items and dict keys. Integers are 64-bit; where Python would grow a big integer the template
// fails with "integer overflow" instead. `str % args` is printf-style formatting (the common
// conversions only), shared with the `format` filter.
#pragma once

#include <string>

#include "tokenizer/jinja_ast.h"
#include "tokenizer/jinja_value.h"

namespace fg::jinja {

Value binary_op(BinaryOp op, const Value& a, const Value& b, Meter& meter);
Value negate(const Value& v);
Value unary_plus(const Value& v);
bool contains(const Value& container, const Value& item, Meter& meter);  // `item in container`
bool compare(CompareOp op, const Value& a, const Value& b, Meter& meter);

// Python's `format % args`: a tuple supplies several arguments, a dict named ones.
std::string percent_format(const std::string& format, const Value& args, Meter& meter);
// Python's str.format with positional and keyword arguments (no nested fields).
std::string brace_format(const std::string& format, const std::vector<Value>& args,
                         const std::vector<std::pair<std::string, Value>>& kwargs, Meter& meter);

}  // namespace fg::jinja
