// server/ignored_fields.h — the request fields the server accepts and ignores: ones OpenAI's and
// vLLM's clients send that change nothing fullgraph returns (storage and billing hints,
// end-user identifiers, a reasoning effort our templates do not read). Refusing them would break
// those clients for nothing; every other unknown field stays a 400 naming it, since ignoring a
// field that does change output would silently answer a different request.
//
// Each is still type-checked (a wrong type is a 400, as OpenAI answers), and each name is logged
// once per process, so an operator sees what clients send without a line per request.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace fg::server {

// Whether `name` is one of the accepted-and-ignored fields.
bool is_ignored_field(std::string_view name);

// Checks the value's type (400 naming the field) and logs the name the first time it is seen.
void accept_ignored_field(const std::string& name, const nlohmann::json& value);

// Logs "request field 'NAME' is accepted and ignored" the first time `name` is seen in this
// process; returns whether it did (for tests). Names not in the set are never logged.
bool note_ignored_field(std::string_view name);

}  // namespace fg::server
