// server/model_endpoints.h — the model objects of GET /v1/models and GET /v1/models/{id}, as
// functions (no HTTP), so that the list and the single view describe a model the same way:
// {"id", "object": "model", "created", "owned_by": "fullgraph", "max_model_len", "vocab_size"}
// (the last two beyond OpenAI's fields, as vLLM adds max_model_len; `bench serve` reads vocab_size
// to make token-id prompts).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "server/model_context.h"

namespace fg::server {

// One served name's model object; `created` is the server's start, in Unix seconds.
nlohmann::ordered_json model_object(const ModelContext& model, const std::string& name, int64_t created);

// GET /v1/models: {"object": "list", "data": [one object per served name]}.
nlohmann::ordered_json model_list(const ModelContext& model, int64_t created);

// GET /v1/models/{id}: `path_id` is what follows "/v1/models/" in the request path, still
// percent-encoded (served names often hold a '/', e.g. "meta-llama/Llama-3.1-8B", which clients
// send as is or as %2F: both are accepted). Throws ApiError 404 (param "model", code
// "model_not_found") for a name that is not served.
nlohmann::ordered_json retrieve_model(const ModelContext& model, std::string_view path_id, int64_t created);

// %XX sequences decoded; anything else, malformed escapes included, kept as it is.
std::string percent_decode(std::string_view text);

}  // namespace fg::server
