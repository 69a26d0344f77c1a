// tokenizer/jinja_filter_families.h — internal to the filter files: each family's (name,
// function) list, which find_filter merges into one table, and the str() conversion they share.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "tokenizer/jinja_filters.h"
#include "tokenizer/jinja_interpreter.h"

namespace fg::jinja {

struct NamedFilter {
  std::string_view name;
  FilterFn fn;
};

std::span<const NamedFilter> string_filters();    // jinja_string_filters.cpp
std::span<const NamedFilter> sequence_filters();  // jinja_sequence_filters.cpp
std::span<const NamedFilter> value_filters();     // jinja_value_filters.cpp

// jinja2's soft_str: str() of the value, so None reads "None" and an undefined value "".
inline std::string soft_str(Interpreter& in, const Value& v) { return to_str(v, in.meter()); }

}  // namespace fg::jinja
