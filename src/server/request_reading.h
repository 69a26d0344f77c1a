// server/request_reading.h — the typed readers every request parser of the server shares
// (generation, tokenize, detokenize): each refuses a value of the wrong type or range with a 400
// naming the field, and quotes at most an excerpt of what was sent.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"

namespace fg::server {

struct ModelContext;

// A present, non-null field. JSON null means "not given", as OpenAI treats it.
const nlohmann::json* field(const nlohmann::json& body, const char* name);

// "integer" for integers, nlohmann's type name otherwise ("string", "array", ...).
std::string type_of(const nlohmann::json& v);
// The value as JSON text, cut to an excerpt for a message.
std::string excerpt(const nlohmann::json& v, size_t max_bytes = 80);

bool read_bool(const nlohmann::json& v, const std::string& param);
int64_t read_int(const nlohmann::json& v, const std::string& param, int64_t lo, int64_t hi);
const std::string& read_string(const nlohmann::json& v, const std::string& param);

// Token ids of this model from a JSON list (each an integer in [0, vocab_size)).
std::vector<int32_t> read_token_ids(const nlohmann::json& list, const std::string& param, const ModelContext& model);

// The served name to report: the first one, whichever alias `body`'s "model" names. A name that
// is not served is a 404 (code "model_not_found", param "model"); a missing one is fine.
const std::string& served_model(const nlohmann::json& body, const ModelContext& model);

}  // namespace fg::server
