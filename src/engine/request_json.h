// engine/request_json.h — a request's sampling, stop and scheduling fields from JSON (a line of
// `generate --prompts`, or an OpenAI request body), checked with errors that name the field.
// The server and `generate --prompts` both read them here, so that a field means the same thing,
// with the same default, offline and served.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "model/generation_config.h"

namespace fg {

// A bad field: `param` names it (for the OpenAI error body), what() says what is wrong.
class RequestFieldError : public Error {
 public:
  RequestFieldError(std::string param, const std::string& message) : Error(message), param_(std::move(param)) {}
  const std::string& param() const { return param_; }

 private:
  std::string param_;
};

// The most logit_bias entries a request may carry (OpenAI documents no limit; each entry costs a
// row of the step's bias table, so some bound is needed).
inline constexpr size_t kMaxLogitBiasEntries = 1024;
// Each bias is bounded by kMaxAbsLogitBias (sampling_params.h), OpenAI's documented bound.

// The names read_request_fields() reads, for callers that refuse unknown fields.
const std::vector<std::string_view>& request_field_names();

// Reads from `body` into `spec`:
//   stop: max_tokens, max_completion_tokens, min_tokens, stop (string or list), stop_token_ids,
//         ignore_eos, include_stop_str_in_output, skip_special_tokens;
//   sampling: temperature, top_p, top_k, min_p, seed, repetition_penalty, presence_penalty,
//         frequency_penalty, logprobs (an integer: 0 = the sampled token's, n = also the top n;
//         true/false as 0/-1), logit_bias ({"token id": bias}), prompt_logprobs;
//   scheduling: priority;
//   the output constraint: response_format, structured_outputs, guided_* (structured_output_json.h).
// A sampling field the body omits takes `defaults` (generation_config.json's) or else vLLM's
// default: temperature 1.0, no filters, no penalties. max_tokens keeps what `spec` already holds
// (its default differs by endpoint). logit_bias ids are checked against `vocab_size` when it is
// positive (the engine checks them again). Unknown fields are the caller's business. Throws
// RequestFieldError.
void read_request_fields(const nlohmann::json& body, RequestSpec& spec, const SamplingDefaults& defaults = {},
                         int64_t vocab_size = 0);

}  // namespace fg
