// tokenizer/jinja_interpreter_impl.h — what the files implementing Interpreter share, internal
// to them: the scope chain and a guard that restores interpreter state after a nested render.
//
// Interpreter is split by job: jinja_interpreter.cpp (lifetime, render, fold),
// jinja_statements.cpp, jinja_expressions.cpp and jinja_value_access.cpp (getattr, getitem,
// slices, iteration).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/jinja_interpreter.h"

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

}  // namespace fg::jinja
