// tokenizer/jinja_interpreter.h — evaluates a parsed template against variables.
//
// The interpreter owns everything one render needs: the scope chain, the output buffer, the
// work meter and the limits. Filters, tests, methods and built-in functions receive it so that
// they can call back (a `map` filter applies another filter, `selectattr` a test) and spend
// steps from the same budget. Nothing survives a render: scopes, namespaces and the meter live
// and die with the Interpreter object.
//
// The implementation is split by job; jinja_interpreter_impl.h lists the files.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/jinja_ast.h"
#include "tokenizer/jinja_callable.h"
#include "tokenizer/jinja_value.h"

namespace fg::jinja {

struct RenderLimits {
  int64_t max_steps = 10'000'000;     // expression/statement evaluations plus bulk work
  size_t max_output_bytes = 1 << 20;  // the prompt, and any string built along the way
  int max_call_depth = 200;           // nested macro calls
  // Native stack the evaluation may use; deep but legal templates (macro recursion in
  // expressions nested in blocks) stop here instead of overflowing the thread's stack.
  size_t max_stack_bytes = 2 << 20;
};

struct Scope;

class Interpreter {
 public:
  Interpreter(const RenderLimits& limits, std::vector<std::pair<std::string, Value>> variables);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Raises TemplateError with the line of the innermost node that failed.
  std::string render(const Body& body);

  // ---- services for filters, tests, methods and built-ins ----
  Meter& meter() { return meter_; }
  Value call(const Value& callee, const CallArgs& args);
  Value getattr(const Value& obj, std::string_view name);
  Value getitem(const Value& obj, const Value& key);
  Value apply_filter(std::string_view name, const Value& input, const CallArgs& args);
  bool apply_test(std::string_view name, const Value& v, const CallArgs& args);
  std::vector<Value> iterate(const Value& v);  // Python iteration: list items, dict keys, characters
  Value make_string(std::string s);            // checks the size limit and charges the copy
  std::shared_ptr<NamespaceData> new_namespace();
  Value invoke_macro(const MacroDef& def, const std::weak_ptr<Scope>& closure, const CallArgs& args);

  // jinja2's compile-time evaluation (as_const): the value of `e` when it reads no variable and
  // calls nothing, else nullopt. Here, as there, a slice of a non-sequence gives an undefined
  // value instead of raising. `known` holds subexpressions already tried: their value, or
  // nullopt for those that cannot fold, so that folding a tree bottom-up stays linear.
  // Never throws.
  using FoldMemo = std::unordered_map<const Expr*, std::optional<Value>>;
  std::optional<Value> fold(const Expr& e, const FoldMemo& known);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  struct NotConstant {};  // thrown while folding when an expression needs the render

  Value eval(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value eval_inner(const Expr& e, const std::shared_ptr<Scope>& scope);
  Flow exec(const Body& body, const std::shared_ptr<Scope>& scope);
  Flow exec_stmt(const Stmt& s, const std::shared_ptr<Scope>& scope);
  Flow exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope);
  Flow capture(const Body& body, const std::shared_ptr<Scope>& scope, std::string& text);
  Value apply_chain(const Expr& filter, const Value& input, const std::shared_ptr<Scope>& scope);
  void emit(const Value& v);
  void assign(const Target& target, const Value& value, Scope& scope);
  CallArgs eval_args(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value apply_filter_expr(const Expr& e, const Value& input, const std::shared_ptr<Scope>& scope);
  Value slice(const Value& obj, const Expr& slice, bool folded, const std::shared_ptr<Scope>& scope);
  void check_stack() const;

  RenderLimits limits_;
  Meter meter_;
  std::shared_ptr<Scope> globals_;  // built-in functions
  std::shared_ptr<Scope> root_;     // template variables and top-level `set`s
  std::string* out_ = nullptr;
  int call_depth_ = 0;
  uintptr_t stack_base_ = 0;
  bool folding_ = false;
  const FoldMemo* fold_memo_ = nullptr;
  // Namespaces are the only mutable values and so the only way to build a reference cycle;
  // they are emptied when the render ends so that every value is freed.
  std::vector<std::weak_ptr<NamespaceData>> namespaces_;
};

}  // namespace fg::jinja
