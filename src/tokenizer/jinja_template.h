// tokenizer/jinja_template.h — the public face of the Jinja engine: parse once, render many.
//
// Errors of either phase surface as fg::Error with the template line:
// "chat template line 12: no filter named 'foo'". Limits bound what a template can cost, so a
// hostile or broken template fails with a message naming the limit instead of hanging the
// server or exhausting memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/jinja_ast.h"
#include "tokenizer/jinja_value.h"

namespace fg {

struct JinjaLimits {
  int64_t max_steps = 10'000'000;     // evaluation steps (nodes, loop iterations, bulk work)
  size_t max_output_bytes = 1 << 20;  // the rendered text and any string built on the way
  int max_nesting = 256;              // parser recursion: parentheses, operators, nested blocks
  int max_call_depth = 200;           // nested macro calls
  size_t max_stack_bytes = 2 << 20;   // native stack the renderer may use
};

class JinjaTemplate {
 public:
  // Parses `source`; throws fg::Error on a syntax error or when a parse limit is exceeded.
  explicit JinjaTemplate(std::string_view source, const JinjaLimits& limits = {});

  // Renders with `variables` (beneath which sit the built-ins range, dict, namespace,
  // raise_exception and strftime_now); throws fg::Error on any runtime error.
  std::string render(std::vector<std::pair<std::string, jinja::Value>> variables) const;

 private:
  JinjaLimits limits_;
  std::shared_ptr<const jinja::Body> body_;
};

}  // namespace fg
