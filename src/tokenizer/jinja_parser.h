// tokenizer/jinja_parser.h — tokens to a syntax tree, with jinja2's grammar and precedence.
#pragma once

#include <string_view>

#include "tokenizer/jinja_ast.h"

namespace fg::jinja {

struct ParseLimits {
  // How deeply the parser may recurse (parentheses, unary operators, nested blocks). Trees may
  // be up to four times deeper through left-associative chains such as a + b + c + ...
  int max_nesting = 256;
};

// Raises TemplateError carrying the line of the offending token.
Body parse_template(std::string_view source, const ParseLimits& limits);

}  // namespace fg::jinja
