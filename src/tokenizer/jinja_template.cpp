// tokenizer/jinja_template.cpp — parse and render entry points; turns engine errors into the
// final "chat template line N: ..." messages (see jinja_template.h).
#include "tokenizer/jinja_template.h"

#include "tokenizer/jinja_error.h"
#include "tokenizer/jinja_fold.h"
#include "tokenizer/jinja_interpreter.h"
#include "tokenizer/jinja_parser.h"

namespace fg {

JinjaTemplate::JinjaTemplate(std::string_view source, const JinjaLimits& limits) : limits_(limits) {
  try {
    auto body = std::make_shared<jinja::Body>(jinja::parse_template(source, {limits.max_nesting}));
    jinja::fold_constants(*body);
    body_ = std::move(body);
  } catch (const jinja::TemplateError& e) {
    throw Error(jinja::describe_template_error(e));
  }
}

std::string JinjaTemplate::render(std::vector<std::pair<std::string, jinja::Value>> variables) const {
  jinja::RenderLimits limits;
  limits.max_steps = limits_.max_steps;
  limits.max_output_bytes = limits_.max_output_bytes;
  limits.max_call_depth = limits_.max_call_depth;
  limits.max_stack_bytes = limits_.max_stack_bytes;
  try {
    jinja::Interpreter interpreter(limits, std::move(variables));
    return interpreter.render(*body_);
  } catch (const jinja::TemplateError& e) {
    throw Error(jinja::describe_template_error(e));
  }
}

}  // namespace fg
