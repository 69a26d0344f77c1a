// tokenizer/jinja_fold.h — jinja2's compile-time constant folding, applied to a parsed template.
//
// jinja2 evaluates literal-only expressions while it compiles a template. The folded value is
// what run time would give, with one difference a template can observe: a folded slice of
// something that is not a sequence (`(2.5)[1:]`) is undefined, because folding goes through the
// sandbox's forgiving getitem, while a run-time slice is a plain Python subscript and raises.
// The pass reproduces where jinja2 folds: a `{{ }}` whose whole expression folds becomes text,
// and elsewhere subexpressions fold bottom-up when their value has a "safe repr" (None, bool,
// numbers, str, range, and lists, tuples and dicts of those).
#pragma once

#include "tokenizer/jinja_ast.h"

namespace fg::jinja {

void fold_constants(Body& body);

}  // namespace fg::jinja
