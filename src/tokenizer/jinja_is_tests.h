// tokenizer/jinja_is_tests.h — the test table for `x is name(args)`: jinja2's built-in tests.
#pragma once

#include <string_view>

#include "tokenizer/jinja_callable.h"
#include "tokenizer/jinja_value.h"

namespace fg::jinja {

using TestFn = bool (*)(Interpreter& in, const Value& v, const CallArgs& args);

TestFn find_test(std::string_view name);  // nullptr when jinja2 has no such test

}  // namespace fg::jinja
