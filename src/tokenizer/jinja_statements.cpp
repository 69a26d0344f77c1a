// tokenizer/jinja_statements.cpp — statement execution: output, if/for/set/with, set and filter
// blocks, macro definitions and calls, and jinja2's `loop` object.
//
// Scoping follows what jinja2's compiled code does: `if` shares its scope, while every loop
// iteration, macro call, `with`, set block and filter block gets a fresh child scope, so a `set`
// inside a loop is gone at the next iteration (the reason templates use namespace()). A macro
// sees the scope it was defined in as it is when called (Python closures bind late); it holds
// that scope weakly, so a macro stored in its own scope is not a reference cycle.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/jinja_interpreter_impl.h"
#include "tokenizer/jinja_pystr.h"

namespace fg::jinja {

namespace {

class MacroObject final : public Object {
 public:
  MacroObject(const MacroDef* def, std::weak_ptr<Scope> closure) : def_(def), closure_(std::move(closure)) {}
  std::string repr() const override { return fmt::format("<Macro {}>", pystr::repr(def_->name)); }
  const char* type_name() const override { return "Macro"; }
  bool callable() const override { return true; }
  Value call(Interpreter& in, const CallArgs& args) const override { return in.invoke_macro(*def_, closure_, args); }
  std::optional<Value> attribute(std::string_view name) const override {
    if (name == "name") return Value::string(def_->name);
    return std::nullopt;
  }

 private:
  const MacroDef* def_;
  std::weak_ptr<Scope> closure_;
};

// jinja2's LoopContext. One object per loop, advanced in place like jinja2's.
class LoopObject final : public Object, public std::enable_shared_from_this<LoopObject> {
 public:
  explicit LoopObject(std::vector<Value> items) : items_(std::move(items)) {}
  void advance(size_t index) { index_ = index; }
  const std::vector<Value>& items() const { return items_; }

  std::string repr() const override { return fmt::format("<LoopContext {}/{}>", index_ + 1, size()); }
  const char* type_name() const override { return "LoopContext"; }

  std::optional<Value> attribute(std::string_view name) const override {
    const auto i = static_cast<int64_t>(index_), n = static_cast<int64_t>(size());
    if (name == "index") return Value::integer(i + 1);
    if (name == "index0") return Value::integer(i);
    if (name == "revindex") return Value::integer(n - i);
    if (name == "revindex0") return Value::integer(n - i - 1);
    if (name == "first") return Value::boolean(i == 0);
    if (name == "last") return Value::boolean(i == n - 1);
    if (name == "length") return Value::integer(n);
    if (name == "depth") return Value::integer(1);
    if (name == "depth0") return Value::integer(0);
    if (name == "previtem") return i > 0 ? items_[index_ - 1] : Value::undefined("there is no previous item");
    if (name == "nextitem") return i + 1 < n ? items_[index_ + 1] : Value::undefined("there is no next item");
    if (name == "cycle") {
      const size_t index = index_;
      return make_function("<bound method LoopContext.cycle>", [index](Interpreter&, const CallArgs& args) {
        if (!args.keyword.empty()) raise("cycle() takes no keyword arguments");
        if (args.positional.empty()) raise("no items for cycling given");
        return args.positional[index % args.positional.size()];
      });
    }
    if (name == "changed") {
      std::shared_ptr<const LoopObject> self = shared_from_this();
      return make_function("<bound method LoopContext.changed>", [self](Interpreter& in, const CallArgs& args) {
        Value current = Value::list(args.positional);
        const bool changed = !self->last_changed_ || !equals(*self->last_changed_, current, in.meter());
        self->last_changed_ = current;
        return Value::boolean(changed);
      });
    }
    return std::nullopt;
  }

 private:
  size_t size() const { return items_.size(); }

  std::vector<Value> items_;
  size_t index_ = 0;
  mutable std::optional<Value> last_changed_;
};

}  // namespace

void Interpreter::emit(const Value& v) {
  append_str(*out_, v, meter_);
  meter_.check_size(out_->size());
}

Interpreter::Flow Interpreter::exec(const Body& body, const std::shared_ptr<Scope>& scope) {
  for (const StmtPtr& s : body) {
    const Flow flow = exec_stmt(*s, scope);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec_stmt(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  meter_.spend(1);
  try {
    check_stack();
    switch (s.kind) {
      case StmtKind::kData:
        out_->append(s.text);
        meter_.check_size(out_->size());
        return Flow::kNormal;
      case StmtKind::kPrint:
        emit(eval(*s.expr, scope));
        return Flow::kNormal;
      case StmtKind::kIf:
        for (const auto& [test, body] : s.branches)
          if (truthy(eval(*test, scope))) return exec(body, scope);
        return exec(s.else_body, scope);
      case StmtKind::kFor:
        return exec_for(s, scope);
      case StmtKind::kSet:
        assign(s.target, eval(*s.expr, scope), *scope);
        return Flow::kNormal;
      case StmtKind::kSetBlock: {
        std::string text;
        const Flow flow = capture(s.body, std::make_shared<Scope>(scope), text);
        Value value = make_string(std::move(text));
        if (s.expr) value = apply_chain(*s.expr, value, scope);
        assign(s.target, value, *scope);
        return flow;
      }
      case StmtKind::kMacro:
        scope->set(s.macro->name, Value::object(std::make_shared<MacroObject>(s.macro.get(), scope)));
        return Flow::kNormal;
      case StmtKind::kBreak:
        return Flow::kBreak;
      case StmtKind::kContinue:
        return Flow::kContinue;
      case StmtKind::kFilterBlock: {
        std::string text;
        const Flow flow = capture(s.body, std::make_shared<Scope>(scope), text);
        emit(apply_chain(*s.expr, make_string(std::move(text)), scope));
        return flow;
      }
      case StmtKind::kWith: {
        std::vector<Value> values;
        for (const auto& assignment : s.assignments) values.push_back(eval(*assignment.second, scope));
        auto inner = std::make_shared<Scope>(scope);
        for (size_t i = 0; i < values.size(); ++i) assign(s.assignments[i].first, values[i], *inner);
        return exec(s.body, inner);
      }
      case StmtKind::kScope:
        exec(s.body, std::make_shared<Scope>(scope));
        return Flow::kNormal;
    }
  } catch (const TemplateError& e) {
    if (e.line() == 0) throw TemplateError(e.message(), s.line);
    throw;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  std::vector<Value> items = iterate(eval(*s.expr, scope));
  if (s.condition) {
    std::vector<Value> kept;
    for (Value& item : items) {
      auto probe = std::make_shared<Scope>(scope);
      assign(s.target, item, *probe);
      if (truthy(eval(*s.condition, probe))) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec(s.else_body, std::make_shared<Scope>(scope));
  auto loop = std::make_shared<LoopObject>(std::move(items));
  const Value loop_value = Value::object(loop);
  const auto& seq = loop->items();
  for (size_t i = 0; i < seq.size(); ++i) {
    meter_.spend(1);
    loop->advance(i);
    auto inner = std::make_shared<Scope>(scope);
    assign(s.target, seq[i], *inner);
    inner->set("loop", loop_value);
    if (exec(s.body, inner) == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::capture(const Body& body, const std::shared_ptr<Scope>& scope, std::string& text) {
  Restore<std::string*> restore(out_);
  out_ = &text;
  return exec(body, scope);
}

void Interpreter::assign(const Target& target, const Value& value, Scope& scope) {
  switch (target.kind) {
    case Target::Kind::kName:
      scope.set(target.name, value);
      return;
    case Target::Kind::kTuple: {
      const std::vector<Value> values = iterate(value);
      if (values.size() < target.items.size())
        raise("not enough values to unpack (expected {}, got {})", target.items.size(), values.size());
      if (values.size() > target.items.size()) raise("too many values to unpack (expected {})", target.items.size());
      for (size_t i = 0; i < values.size(); ++i) assign(target.items[i], values[i], scope);
      return;
    }
    case Target::Kind::kNamespaceAttr: {
      const Value* ns = scope.find(target.name);
      if (!ns || !ns->is_namespace()) raise("cannot assign attribute on non-namespace object");
      ns->ns_data().set(target.attr, value);
      return;
    }
  }
}

Value Interpreter::invoke_macro(const MacroDef& def, const std::weak_ptr<Scope>& closure, const CallArgs& args) {
  if (call_depth_ >= limits_.max_call_depth) raise("macro calls nested more than {} deep", limits_.max_call_depth);
  Restore<int> depth(call_depth_);
  ++call_depth_;
  std::shared_ptr<Scope> parent = closure.lock();
  if (!parent) parent = root_;  // the macro outlived the loop it was defined in
  auto scope = std::make_shared<Scope>(parent);
  const size_t n = def.params.size();
  if (args.positional.size() > n) raise("macro '{}' takes not more than {} argument(s)", def.name, n);
  std::vector<const Value*> given(n, nullptr);
  for (size_t i = 0; i < args.positional.size(); ++i) given[i] = &args.positional[i];
  for (const auto& [name, value] : args.keyword) {
    const auto it = std::find(def.params.begin(), def.params.end(), name);
    if (it == def.params.end()) raise("macro '{}' takes no keyword argument '{}'", def.name, name);
    const auto i = static_cast<size_t>(it - def.params.begin());
    if (given[i]) raise("macro '{}' got multiple values for argument '{}'", def.name, name);
    given[i] = &value;
  }
  for (size_t i = 0; i < n; ++i) {
    if (given[i]) {
      scope->set(def.params[i], *given[i]);
    } else if (def.defaults[i]) {
      scope->set(def.params[i], eval(*def.defaults[i], scope));
    } else {
      scope->set(def.params[i], Value::undefined(fmt::format("parameter '{}' was not provided", def.params[i])));
    }
  }
  std::string text;
  capture(def.body, scope, text);
  return make_string(std::move(text));
}

}  // namespace fg::jinja
