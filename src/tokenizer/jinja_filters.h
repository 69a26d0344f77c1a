// tokenizer/jinja_filters.h — the filter table: jinja2's built-in filters plus transformers'
// `tojson`, looked up by name.
#pragma once

#include <string_view>

#include "tokenizer/jinja_callable.h"
#include "tokenizer/jinja_value.h"

namespace fg::jinja {

using FilterFn = Value (*)(Interpreter& in, const Value& input, const CallArgs& args);

// nullptr when jinja2 has no filter of that name. A few filters jinja2 has but chat templates
// do not use are known (so a template mentioning them parses) and fail when applied.
FilterFn find_filter(std::string_view name);

}  // namespace fg::jinja
