// tokenizer/jinja_fold.cpp — constant folding over the syntax tree (see jinja_fold.h).
#include "tokenizer/jinja_fold.h"

#include "tokenizer/jinja_interpreter.h"

namespace fg::jinja {

namespace {

// jinja2's has_safe_repr: the values its compiler can write back into generated code.
bool safe_repr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::None:
    case Value::Kind::Bool:
    case Value::Kind::Int:
    case Value::Kind::Float:
    case Value::Kind::String:
      return true;
    case Value::Kind::List:
      if (v.seq_kind() == SeqKind::kRange) return true;
      if (!v.is_plain_sequence()) return false;
      for (const Value& item : v.items())
        if (!safe_repr(item)) return false;
      return true;
    case Value::Kind::Dict:
      for (const auto& [key, value] : v.dict_data().entries)
        if (!safe_repr(key) || !safe_repr(value)) return false;
      return true;
    default:
      return false;
  }
}

class Folder {
 public:
  // One budget for the whole pass: folding is an optimisation of jinja2's, and once the budget
  // is spent the rest simply evaluates at run time.
  Folder() : in_(limits(), {}) {}

  void body(Body& statements) {
    for (StmtPtr& s : statements) stmt(*s);
  }

 private:
  static RenderLimits limits() {
    RenderLimits l;
    l.max_steps = 1'000'000;
    return l;
  }

  void stmt(Stmt& s) {
    if (s.kind == StmtKind::kSetBlock || s.kind == StmtKind::kFilterBlock) {
      chain_args(s.expr.get());
    } else {
      expr(s.expr);
    }
    if (s.kind == StmtKind::kPrint) print(s);
    expr(s.condition);
    for (auto& [test, branch] : s.branches) {
      expr(test);
      body(branch);
    }
    body(s.body);
    body(s.else_body);
    for (auto& assignment : s.assignments) expr(assignment.second);
    if (s.macro) {
      for (ExprPtr& d : s.macro->defaults) expr(d);
      body(s.macro->body);
    }
  }

  // jinja2 prints an expression that folds whole at compile time, whatever its value (an
  // undefined one prints as ""); folding bottom-up first gives that same value.
  void print(Stmt& s) {
    std::optional<Value> v;
    if (s.expr->kind == ExprKind::kConst) {
      v = s.expr->value;
    } else if (const auto it = known_.find(s.expr.get()); it != known_.end()) {
      v = it->second;
    }
    if (!v) return;
    try {
      s.text = to_str(*v, in_.meter());
    } catch (const TemplateError&) {
      return;  // too large to print: run time fails the same way
    }
    s.kind = StmtKind::kData;
    replaced_.push_back(std::move(s.expr));
  }

  // A filter chain without input ({% filter %}, {% set x | f %}): only its arguments fold.
  void chain_args(Expr* e) {
    for (; e; e = e->target.get()) children(*e, false);
  }

  void children(Expr& e, bool with_target) {
    if (with_target) expr(e.target);
    for (ExprPtr& item : e.items) expr(item);
    for (auto& kw : e.kwargs) expr(kw.second);
    expr(e.dyn_args);
    expr(e.dyn_kwargs);
  }

  void expr(ExprPtr& e) {
    if (!e) return;
    if (e->kind == ExprKind::kFilter && !e->target) {
      chain_args(e.get());
      return;
    }
    children(*e, true);
    if (e->kind == ExprKind::kConst) return;
    std::optional<Value> v = e->kind == ExprKind::kSlice ? std::nullopt : in_.fold(*e, known_);
    if (!v || !safe_repr(*v)) {
      known_[e.get()] = std::move(v);  // parents reuse it instead of evaluating it again
      return;
    }
    auto folded = std::make_unique<Expr>();
    folded->kind = ExprKind::kConst;
    folded->line = e->line;
    folded->value = std::move(*v);
    replaced_.push_back(std::move(e));  // kept alive: `known_` may hold pointers into it
    e = std::move(folded);
  }

  Interpreter in_;
  Interpreter::FoldMemo known_;
  std::vector<ExprPtr> replaced_;
};

}  // namespace

void fold_constants(Body& body) { Folder().body(body); }

}  // namespace fg::jinja
