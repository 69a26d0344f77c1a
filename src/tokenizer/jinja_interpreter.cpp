// tokenizer/jinja_interpreter.cpp — the tree-walking evaluator (see jinja_interpreter.h).
//
// Scoping follows what jinja2's compiled code does: `if` shares its scope, while every loop
// iteration, macro call, `with`, set block and filter block gets a fresh child scope, so a `set`
// inside a loop is gone at the next iteration (the reason templates use namespace()). A macro
// sees the scope it was defined in as it is when called (Python closures bind late); it holds
// that scope weakly, so a macro stored in its own scope is not a reference cycle.
//
// Attribute and item access mirror jinja2's sandboxed getattr/getitem: `x.name` tries the Python
// attribute (a method) before the dict key, `x['name']` the key before the attribute, and a miss
// is an undefined value, not an error — only using an undefined value fails.
#include "tokenizer/jinja_interpreter.h"

#include <fmt/format.h>

#include <algorithm>

#include "tokenizer/jinja_filters.h"
#include "tokenizer/jinja_is_tests.h"
#include "tokenizer/jinja_methods.h"
#include "tokenizer/jinja_operators.h"
#include "tokenizer/jinja_pystr.h"

namespace fg::jinja {

struct Scope {
  explicit Scope(std::shared_ptr<Scope> p) : parent(std::move(p)) {}

  const Value* find(std::string_view name) const {
    for (const Scope* s = this; s; s = s->parent.get())
      for (const auto& [key, value] : s->vars)
        if (key == name) return &value;
    return nullptr;
  }

  void set(std::string_view name, Value value) {
    for (auto& [key, slot] : vars) {
      if (key == name) {
        slot = std::move(value);
        return;
      }
    }
    vars.emplace_back(std::string(name), std::move(value));
  }

  std::shared_ptr<Scope> parent;
  std::vector<std::pair<std::string, Value>> vars;
};

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

// Restores a variable when a nested render (macro, set block) finishes or fails.
template <typename T>
class Restore {
 public:
  explicit Restore(T& slot) : slot_(slot), saved_(slot) {}
  ~Restore() { slot_ = saved_; }
  Restore(const Restore&) = delete;
  Restore& operator=(const Restore&) = delete;

 private:
  T& slot_;
  T saved_;
};

bool hashable(const Value& v) {
  if (v.is_dict()) return false;
  if (v.is_list()) {
    if (!v.is_tuple()) return false;
    return std::all_of(v.items().begin(), v.items().end(), hashable);
  }
  return true;
}

std::string describe_owner(const Value& obj) {
  return obj.is_none() ? "'None'" : fmt::format("'{} object'", type_name(obj));
}

// A Python attribute (not a dict key): methods of str/list/dict, namespace and object fields.
std::optional<Value> python_attribute(const Value& obj, std::string_view name) {
  switch (obj.kind()) {
    case Value::Kind::String:
    case Value::Kind::List:
    case Value::Kind::Dict:
      return find_method(obj, name);
    case Value::Kind::Namespace:
      if (const Value* v = obj.ns_data().find(name)) return *v;
      return std::nullopt;
    case Value::Kind::Object:
      return obj.object().attribute(name);
    default:
      return std::nullopt;
  }
}

// Python's slice.indices(): clamps start/stop for `length` elements; returns the count.
int64_t slice_indices(int64_t length, const std::optional<int64_t>& start_arg, const std::optional<int64_t>& stop_arg,
                      int64_t step, int64_t& start) {
  // Clamping the step keeps the arithmetic below in range without changing the result.
  step = std::clamp<int64_t>(step, -(length + 1), length + 1);
  auto clamp_index = [&](int64_t i) {
    if (i < 0) {
      i += length;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= length) {
      i = step < 0 ? length - 1 : length;
    }
    return i;
  };
  start = start_arg ? clamp_index(*start_arg) : (step < 0 ? length - 1 : 0);
  const int64_t stop = stop_arg ? clamp_index(*stop_arg) : (step < 0 ? -1 : length);
  if (step > 0) return stop > start ? (stop - start + step - 1) / step : 0;
  return start > stop ? (start - stop - step - 1) / (-step) : 0;
}

}  // namespace

Interpreter::Interpreter(const RenderLimits& limits, std::vector<std::pair<std::string, Value>> variables)
    : limits_(limits), meter_(limits.max_steps, limits.max_output_bytes) {
  globals_ = std::make_shared<Scope>(nullptr);
  for (auto& [name, value] : builtin_globals()) globals_->set(name, std::move(value));
  root_ = std::make_shared<Scope>(globals_);
  for (auto& [name, value] : variables) root_->set(name, std::move(value));
}

Interpreter::~Interpreter() {
  for (const auto& weak : namespaces_) {
    if (auto ns = weak.lock()) {
      auto attrs = std::move(ns->attrs);
      ns->attrs.clear();
      ns->index.clear();
    }
  }
}

std::string Interpreter::render(const Body& body) {
  stack_base_ = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  std::string out;
  Restore<std::string*> restore(out_);
  out_ = &out;
  exec(body, root_);
  return out;
}

void Interpreter::check_stack() const {
  const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const uintptr_t used = stack_base_ > here ? stack_base_ - here : here - stack_base_;
  if (used > limits_.max_stack_bytes)
    raise("template recursion too deep (stack limit of {} bytes)", limits_.max_stack_bytes);
}

Value Interpreter::make_string(std::string s) {
  meter_.check_size(s.size());
  meter_.spend(static_cast<int64_t>(s.size() / 64));
  return Value::string(std::move(s));
}

std::shared_ptr<NamespaceData> Interpreter::new_namespace() {
  auto ns = std::make_shared<NamespaceData>();
  if (namespaces_.size() >= 64 && namespaces_.size() == namespaces_.capacity()) {
    std::erase_if(namespaces_, [](const std::weak_ptr<NamespaceData>& w) { return w.expired(); });
  }
  namespaces_.push_back(ns);
  return ns;
}

void Interpreter::emit(const Value& v) {
  append_str(*out_, v, meter_);
  meter_.check_size(out_->size());
}

std::optional<Value> Interpreter::fold(const Expr& e, const FoldMemo& known) {
  stack_base_ = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  Restore<bool> restore(folding_);
  Restore<const FoldMemo*> restore_memo(fold_memo_);
  folding_ = true;
  fold_memo_ = &known;
  try {
    return eval(e, root_);
  } catch (const NotConstant&) {
    return std::nullopt;
  } catch (const TemplateError&) {
    return std::nullopt;  // jinja2 leaves it to fail (or not) at run time
  }
}

// ---- statements ----

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

// ---- expressions ----

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

Value Interpreter::getattr(const Value& obj, std::string_view name) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (auto attr = python_attribute(obj, name)) return *attr;
  if (obj.is_dict()) {
    if (const Value* v = obj.dict_data().find(name)) return *v;
  }
  return Value::undefined(fmt::format("{} has no attribute '{}'", describe_owner(obj), name));
}

Value Interpreter::getitem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  switch (obj.kind()) {
    case Value::Kind::List:
      if (key.is_integral() && obj.seq_kind() <= SeqKind::kRange) {  // views cannot be indexed
        const auto& items = obj.items();
        int64_t i = key.as_int();
        if (i < 0) i += static_cast<int64_t>(items.size());
        if (i >= 0 && i < static_cast<int64_t>(items.size())) return items[static_cast<size_t>(i)];
      }
      break;
    case Value::Kind::String:
      if (key.is_integral()) {
        const std::string& s = obj.str();
        int64_t i = key.as_int();
        if (pystr::is_ascii(s)) {
          if (i < 0) i += static_cast<int64_t>(s.size());
          if (i >= 0 && i < static_cast<int64_t>(s.size()))
            return Value::string(std::string(1, s[static_cast<size_t>(i)]));
        } else {
          const std::u32string cps = pystr::decode(s);
          if (i < 0) i += static_cast<int64_t>(cps.size());
          if (i >= 0 && i < static_cast<int64_t>(cps.size())) {
            std::string c;
            pystr::append_utf8(c, cps[static_cast<size_t>(i)]);
            return Value::string(std::move(c));
          }
        }
      }
      break;
    case Value::Kind::Dict:
      if (hashable(key)) {
        if (const Value* v = obj.dict_data().find(key)) return *v;
      }
      break;
    default:
      break;
  }
  if (key.is_string()) {
    if (auto attr = python_attribute(obj, key.str())) return *attr;
  }
  std::string key_text;
  append_repr(key_text, key, meter_);
  return Value::undefined(fmt::format("{} has no element {}", describe_owner(obj), key_text));
}

Value Interpreter::slice(const Value& obj, const Expr& s, bool folded, const std::shared_ptr<Scope>& scope) {
  // jinja2 compiles slices to plain Python subscripts, bypassing the sandbox's forgiving
  // getitem, so a bad slice is an error rather than an undefined value.
  std::optional<int64_t> bounds[3];
  bool valid = true;
  for (int k = 0; k < 3; ++k) {
    if (!s.items[static_cast<size_t>(k)]) continue;
    const Value v = eval(*s.items[static_cast<size_t>(k)], scope);
    if (v.is_integral()) {
      bounds[k] = v.as_int();
    } else if (!v.is_none()) {
      valid = false;
    }
  }
  if (obj.is_undefined()) fail_undefined(obj);
  const bool sliceable =
      obj.is_string() || (obj.is_list() && (obj.is_plain_sequence() || obj.seq_kind() == SeqKind::kRange));
  if (!sliceable || !valid) {
    // jinja2 folds constant slices with the sandbox's forgiving getitem, but compiles the
    // others to plain Python subscripts, which raise.
    if (folded) return Value::undefined(fmt::format("{} has no element slice", describe_owner(obj)));
    if (obj.is_dict()) raise("unhashable type: 'slice'");
    if (!sliceable) raise("'{}' object is not subscriptable", type_name(obj));
    raise("slice indices must be integers or None or have an __index__ method");
  }
  const int64_t step = bounds[2].value_or(1);
  if (step == 0) raise("slice step cannot be zero");
  if (obj.is_list()) {
    const auto& items = obj.items();
    int64_t start = 0;
    const int64_t count = slice_indices(static_cast<int64_t>(items.size()), bounds[0], bounds[1], step, start);
    meter_.spend(count);
    std::vector<Value> out;
    out.reserve(static_cast<size_t>(count));
    for (int64_t k = 0, i = start; k < count; ++k, i += step) out.push_back(items[static_cast<size_t>(i)]);
    return Value::list(std::move(out), obj.is_tuple());
  }
  const std::u32string cps = pystr::decode(obj.str());
  int64_t start = 0;
  const int64_t count = slice_indices(static_cast<int64_t>(cps.size()), bounds[0], bounds[1], step, start);
  std::u32string out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t k = 0, i = start; k < count; ++k, i += step) out.push_back(cps[static_cast<size_t>(i)]);
  return make_string(pystr::encode(out));
}

std::vector<Value> Interpreter::iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return {};
    case Value::Kind::List:
      meter_.spend(static_cast<int64_t>(v.items().size()));
      return v.items();
    case Value::Kind::Object:
      if (const GeneratorObject* gen = as_generator(v)) {
        std::vector<Value> items;
        while (std::optional<Value> item = gen->next(*this)) {
          meter_.spend(1);
          items.push_back(std::move(*item));
        }
        return items;
      }
      raise("'{}' object is not iterable", type_name(v));
    case Value::Kind::Dict: {
      std::vector<Value> keys;
      keys.reserve(v.dict_data().entries.size());
      for (const auto& entry : v.dict_data().entries) keys.push_back(entry.first);
      meter_.spend(static_cast<int64_t>(keys.size()));
      return keys;
    }
    case Value::Kind::String: {
      std::vector<Value> chars;
      for (char32_t c : pystr::decode(v.str())) {
        std::string s;
        pystr::append_utf8(s, c);
        chars.push_back(Value::string(std::move(s)));
      }
      meter_.spend(static_cast<int64_t>(chars.size()));
      return chars;
    }
    default:
      raise("'{}' object is not iterable", type_name(v));
  }
}

}  // namespace fg::jinja
