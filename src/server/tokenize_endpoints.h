// server/tokenize_endpoints.h — vLLM's POST /tokenize and POST /detokenize, as functions from the
// request body to the response body (no HTTP): what a client uses to count a prompt's tokens, or
// to see the ids a chat renders to, with the same tokenizer and template the server generates
// with.
//
//   /tokenize  {"model"?, "prompt": str, "add_special_tokens"? (true), "return_token_strs"? (false)}
//           or {"model"?, "messages": [...], "add_generation_prompt"? (true),
//               "continue_final_message"? (false), "add_special_tokens"? (false),
//               "chat_template_kwargs"?, "return_token_strs"? (false)}
//           -> {"count", "max_model_len", "tokens": [...], "token_strs": [...] or null}
//   /detokenize {"model"?, "tokens": [...]} -> {"prompt": str}   (special tokens kept)
//
// token_strs are the vocabulary's own strings ("▁Hello", "Ġworld", "<0x0A>"), as transformers'
// convert_ids_to_tokens gives them. Validation is the generation endpoints': unknown fields and
// bad values are a 400 naming the field, another model's name a 404.
#pragma once

#include <nlohmann/json.hpp>

#include "server/model_context.h"

namespace fg::server {

nlohmann::ordered_json tokenize_response(const nlohmann::json& body, const ModelContext& model);
nlohmann::ordered_json detokenize_response(const nlohmann::json& body, const ModelContext& model);

}  // namespace fg::server
