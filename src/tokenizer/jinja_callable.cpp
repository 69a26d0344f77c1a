// tokenizer/jinja_callable.cpp — binding call arguments to parameter lists (see jinja_callable.h).
#include "tokenizer/jinja_callable.h"

#include <fmt/format.h>

namespace fg::jinja {

namespace {

const Value kAbsent;  // what get() returns for a parameter that was not given

}  // namespace

BoundArgs::BoundArgs(const CallArgs& args, std::string_view function, std::vector<std::string_view> names,
                     size_t required)
    : function_(function), names_(std::move(names)), slots_(names_.size(), nullptr) {
  if (args.positional.size() > names_.size())
    raise("{}() takes at most {} argument{} ({} given)", function_, names_.size(), names_.size() == 1 ? "" : "s",
          args.positional.size());
  for (size_t i = 0; i < args.positional.size(); ++i) slots_[i] = &args.positional[i];
  for (const auto& [name, value] : args.keyword) {
    size_t i = 0;
    while (i < names_.size() && names_[i] != name) ++i;
    if (i == names_.size()) raise("{}() got an unexpected keyword argument '{}'", function_, name);
    if (slots_[i]) raise("{}() got multiple values for argument '{}'", function_, name);
    slots_[i] = &value;
  }
  for (size_t i = 0; i < required; ++i)
    if (!slots_[i]) raise("{}() missing required argument '{}'", function_, names_[i]);
}

std::optional<Value> GeneratorObject::next(Interpreter& in) const {
  if (!next_) return std::nullopt;
  if (running_) raise("generator already executing");
  running_ = true;
  std::optional<Value> item;
  try {
    item = next_(in);
  } catch (...) {
    running_ = false;
    next_ = nullptr;  // like Python, a generator that raised is finished
    throw;
  }
  running_ = false;
  if (!item) next_ = nullptr;
  return item;
}

const Value& BoundArgs::get(size_t i) const { return slots_[i] ? *slots_[i] : kAbsent; }

int64_t BoundArgs::get_int(size_t i, int64_t fallback) const {
  if (!has(i)) return fallback;
  return require_int(*slots_[i], fmt::format("{}() argument '{}'", function_, names_[i]));
}

bool BoundArgs::get_bool(size_t i, bool fallback) const { return has(i) ? truthy(*slots_[i]) : fallback; }

std::string BoundArgs::get_str(size_t i, const std::string& fallback) const {
  if (!has(i)) return fallback;
  return require_str(*slots_[i], fmt::format("{}() argument '{}'", function_, names_[i]));
}

int64_t require_int(const Value& v, std::string_view what) {
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_integral()) raise("{} must be an integer, not '{}'", what, type_name(v));
  return v.as_int();
}

const std::string& require_str(const Value& v, std::string_view what) {
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_string()) raise("{} must be a string, not '{}'", what, type_name(v));
  return v.str();
}

}  // namespace fg::jinja
