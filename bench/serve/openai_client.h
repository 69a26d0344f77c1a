// bench/serve/openai_client.h — the HTTP side of `bench serve`, over cpp-httplib: the model list
// of an OpenAI-compatible server and one streamed /v1/completions request, timed.
//
// Every request opens its own connection on its own thread (the benchmark runner's), so nothing
// here is shared between requests and the client holds no state of its own.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench/serve/base_url.h"
#include "bench/serve/random_dataset.h"
#include "bench/serve/request_result.h"

namespace fg::bench {

struct ServerConnection {
  BaseUrl url;
  std::string api_key;         // sent as "Authorization: Bearer ..." when not empty
  double timeout_s = 6 * 3600;  // per read and write; vLLM's client waits up to 6 hours
};

struct ServedModel {
  std::string id;
  std::optional<int64_t> vocab_size;     // not in OpenAI's schema; servers that expose it help
  std::optional<int64_t> max_model_len;  // vLLM's extension
};

// GET {prefix}/v1/models. Errors name the URL and what came back.
std::vector<ServedModel> fetch_models(const ServerConnection& server);

// The JSON body vLLM's openai-completions client sends, with the prompt as token ids: greedy,
// exactly `output_len` tokens (ignore_eos), streamed, with a final usage chunk.
nlohmann::json completion_request_body(const std::string& model, const BenchRequest& request);

// POSTs the request to `endpoint` and measures the stream. Never throws: transport errors, HTTP
// errors and malformed streams come back as a failed RequestResult that says what happened.
RequestResult stream_completion(const ServerConnection& server, const std::string& endpoint, const std::string& model,
                                const BenchRequest& request);

}  // namespace fg::bench
