// engine/request_json.h — a request's sampling and stop fields from JSON (a line of
// `generate --prompts`, later an OpenAI request body), checked with errors that name the field.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "engine/engine.h"

namespace fg {

// A bad field: `param` names it (for the OpenAI error body), what() says what is wrong.
class RequestFieldError : public Error {
 public:
  RequestFieldError(std::string param, const std::string& message) : Error(message), param_(std::move(param)) {}
  const std::string& param() const { return param_; }

 private:
  std::string param_;
};

// Reads max_tokens, min_tokens, temperature, top_p, top_k, min_p, seed, stop (string or list),
// stop_token_ids, ignore_eos, include_stop_str_in_output, skip_special_tokens,
// repetition_penalty, presence_penalty, frequency_penalty and logprobs (an integer: 0 = the
// sampled token's, n = also the top n) from `body` into `spec`, over the defaults already there.
// Unknown fields are the caller's business. Throws RequestFieldError.
void read_request_fields(const nlohmann::json& body, RequestSpec& spec);

}  // namespace fg
