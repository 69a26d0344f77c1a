// tokenizer/jinja_expressions.cpp — expression evaluation: literals, names, operators,
// comparisons, calls, filters and tests, and the dispatch of a filter or test by name.
//
// While folding (Interpreter::fold), anything that needs the render — a variable, a call, a
// filter that takes the render context — throws NotConstant instead of being evaluated.
#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

#include "tokenizer/jinja_filters.h"
#include "tokenizer/jinja_interpreter_impl.h"
#include "tokenizer/jinja_is_tests.h"
#include "tokenizer/jinja_operators.h"

namespace fg::jinja {

Value Interpreter::eval(const Expr& e, const std::shared_ptr<Scope>& scope) {
  meter_.spend(1);
  if (folding_) {
    const auto it = fold_memo_->find(&e);
    if (it != fold_memo_->end()) {
      if (!it->second) throw NotConstant();
      return *it->second;
    }
  }
  try {
    check_stack();
    return eval_inner(e, scope);
  } catch (const TemplateError& err) {
    if (err.line() == 0) throw TemplateError(err.message(), e.line);
    throw;
  }
}

Value Interpreter::eval_inner(const Expr& e, const std::shared_ptr<Scope>& scope) {
  switch (e.kind) {
    case ExprKind::kConst:
      return e.value;
    case ExprKind::kName:
      if (folding_) throw NotConstant();
      if (const Value* v = scope->find(e.name)) return *v;
      return Value::undefined(fmt::format("'{}' is undefined", e.name));
    case ExprKind::kList:
    case ExprKind::kTuple: {
      std::vector<Value> items;
      items.reserve(e.items.size());
      for (const ExprPtr& item : e.items) items.push_back(eval(*item, scope));
      return Value::list(std::move(items), e.kind == ExprKind::kTuple);
    }
    case ExprKind::kDict: {
      DictBuilder dict;
      for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
        Value key = eval(*e.items[i], scope);
        dict.set(std::move(key), eval(*e.items[i + 1], scope));
      }
      return dict.build();
    }
    case ExprKind::kGetattr:
      return getattr(eval(*e.target, scope), e.name);
    case ExprKind::kGetitem: {
      Value obj = eval(*e.target, scope);
      if (e.items[0]->kind == ExprKind::kSlice) return slice(obj, *e.items[0], folding_, scope);
      return getitem(obj, eval(*e.items[0], scope));
    }
    case ExprKind::kSlice:
      raise("a slice is only allowed directly inside []");
    case ExprKind::kCall: {
      if (folding_) throw NotConstant();
      Value callee = eval(*e.target, scope);
      return call(callee, eval_args(e, scope));
    }
    case ExprKind::kFilter:
      // jinja2 cannot fold the filters that take the render context.
      if (folding_ && (!e.target || e.name == "map" || e.name == "select" || e.name == "reject" ||
                       e.name == "selectattr" || e.name == "rejectattr" || !find_filter(e.name)))
        throw NotConstant();
      return apply_filter_expr(e, eval(*e.target, scope), scope);
    case ExprKind::kTest: {
      if (folding_ && !find_test(e.name)) throw NotConstant();
      Value v = eval(*e.target, scope);
      return Value::boolean(apply_test(e.name, v, eval_args(e, scope)));
    }
    case ExprKind::kNeg:
      return negate(eval(*e.target, scope));
    case ExprKind::kPos:
      return unary_plus(eval(*e.target, scope));
    case ExprKind::kNot:
      return Value::boolean(!truthy(eval(*e.target, scope)));
    case ExprKind::kBinary: {
      Value a = eval(*e.items[0], scope);
      return binary_op(e.binary_op, a, eval(*e.items[1], scope), meter_);
    }
    case ExprKind::kCompare: {
      Value left = eval(*e.items[0], scope);
      for (size_t i = 0; i < e.compare_ops.size(); ++i) {
        Value right = eval(*e.items[i + 1], scope);
        const CompareOp op = e.compare_ops[i];
        bool holds;
        if (const GeneratorObject* gen = as_generator(right);
            gen && (op == CompareOp::kIn || op == CompareOp::kNotIn)) {
          holds = op == CompareOp::kNotIn;  // `in` consumes a generator up to the first match
          while (std::optional<Value> item = gen->next(*this)) {
            meter_.spend(1);
            if (equals(*item, left, meter_)) {
              holds = !holds;
              break;
            }
          }
        } else {
          holds = compare(op, left, right, meter_);
        }
        if (!holds) return Value::boolean(false);
        left = std::move(right);
      }
      return Value::boolean(true);
    }
    case ExprKind::kConcat: {
      std::string text;
      for (const ExprPtr& item : e.items) {
        append_str(text, eval(*item, scope), meter_);
        meter_.check_size(text.size());
      }
      return make_string(std::move(text));
    }
    case ExprKind::kAnd: {
      Value left = eval(*e.items[0], scope);
      return truthy(left) ? eval(*e.items[1], scope) : left;
    }
    case ExprKind::kOr: {
      Value left = eval(*e.items[0], scope);
      return truthy(left) ? left : eval(*e.items[1], scope);
    }
    case ExprKind::kCondExpr:
      if (truthy(eval(*e.items[0], scope))) return eval(*e.items[1], scope);
      if (e.items[2]) return eval(*e.items[2], scope);
      if (folding_) throw NotConstant();
      return Value::undefined(fmt::format(
          "the inline if-expression on line {} evaluated to false and no else section was defined.", e.line));
  }
  raise("unknown expression");
}

CallArgs Interpreter::eval_args(const Expr& e, const std::shared_ptr<Scope>& scope) {
  CallArgs args;
  for (const ExprPtr& item : e.items) args.positional.push_back(eval(*item, scope));
  if (e.dyn_args) {
    for (Value& v : iterate(eval(*e.dyn_args, scope))) args.positional.push_back(std::move(v));
  }
  for (const auto& [name, value] : e.kwargs) args.keyword.emplace_back(name, eval(*value, scope));
  if (e.dyn_kwargs) {
    const Value extra = eval(*e.dyn_kwargs, scope);
    if (!extra.is_dict()) raise("argument after ** must be a mapping, not {}", type_name(extra));
    for (const auto& [key, value] : extra.dict_data().entries) {
      if (!key.is_string()) raise("keywords must be strings");
      args.keyword.emplace_back(key.str(), value);
    }
  }
  return args;
}

Value Interpreter::apply_filter_expr(const Expr& e, const Value& input, const std::shared_ptr<Scope>& scope) {
  return apply_filter(e.name, input, eval_args(e, scope));
}

Value Interpreter::apply_chain(const Expr& filter, const Value& input, const std::shared_ptr<Scope>& scope) {
  const Value base = filter.target ? apply_chain(*filter.target, input, scope) : input;
  meter_.spend(1);
  try {
    return apply_filter_expr(filter, base, scope);
  } catch (const TemplateError& err) {
    if (err.line() == 0) throw TemplateError(err.message(), filter.line);
    throw;
  }
}

Value Interpreter::apply_filter(std::string_view name, const Value& input, const CallArgs& args) {
  const FilterFn fn = find_filter(name);
  if (!fn) raise("no filter named '{}' found", name);
  return fn(*this, input, args);
}

bool Interpreter::apply_test(std::string_view name, const Value& v, const CallArgs& args) {
  const TestFn fn = find_test(name);
  if (!fn) raise("no test named '{}' found", name);
  return fn(*this, v, args);
}

Value Interpreter::call(const Value& callee, const CallArgs& args) {
  if (callee.is_undefined()) fail_undefined(callee);
  if (!callee.is_object() || !callee.object().callable()) raise("'{}' object is not callable", type_name(callee));
  return callee.object().call(*this, args);
}

}  // namespace fg::jinja
