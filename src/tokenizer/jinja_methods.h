// tokenizer/jinja_methods.h — methods of str, dict and list values (and the Python attribute
// lookup built on them), and the global functions (range, dict, namespace, raise_exception,
// strftime_now) that transformers' environment has.
//
// Attribute access on a string, list or dict yields a bound method object; calling it runs the
// Python method. The sandbox transformers renders in (ImmutableSandboxedEnvironment) refuses
// methods that mutate a list or dict, so `messages.append(x)` fails here exactly as it does
// there ("access to attribute 'append' of 'list' object is unsafe").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/jinja_value.h"

namespace fg::jinja {

// The bound method `receiver.name`, or nullopt when the type has no such method.
std::optional<Value> find_method(const Value& receiver, std::string_view name);

// A Python attribute, never a dict key: a method of str/list/dict (through find_method), a
// namespace's field or an object's attribute; nullopt when there is none.
std::optional<Value> python_attribute(const Value& obj, std::string_view name);

// The built-in global functions, to be installed beneath the template's variables.
std::vector<std::pair<std::string, Value>> builtin_globals();

}  // namespace fg::jinja
