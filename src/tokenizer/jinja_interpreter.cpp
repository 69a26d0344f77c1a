// tokenizer/jinja_interpreter.cpp — the Interpreter's lifetime, its two entry points (render and
// fold) and the bookkeeping it offers filters and methods: strings within the size limit,
// namespaces it can break up at the end, and the native stack guard.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/jinja_interpreter_impl.h"
#include "tokenizer/jinja_methods.h"

namespace fg::jinja {

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

}  // namespace fg::jinja
