// engine/request_json.cpp — reading request fields from JSON, strictly: a field of the wrong type,
// NaN/Inf or out of range is refused by name rather than coerced. Messages quote at most an
// excerpt of the value: a request body can hold megabytes in one field.
#include "engine/request_json.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <set>

#include "core/json/strict_json.h"
#include "engine/structured_output_json.h"

namespace fg {

namespace {

constexpr size_t kMaxStopStrings = 16;
constexpr size_t kMaxStopTokenIds = 64;
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw RequestFieldError(param, fmt::format("'{}': {}", param, message));
}

const nlohmann::json* field(const nlohmann::json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

// The value as JSON text, cut to an excerpt.
std::string excerpt(const nlohmann::json& v) {
  return clip_for_message(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 80);
}

double read_number(const nlohmann::json& v, const char* name, double lo, double hi) {
  if (!v.is_number()) bad(name, fmt::format("expected a number, got {}", v.type_name()));
  const double x = v.get<double>();
  if (!std::isfinite(x)) bad(name, "must be finite");
  if (x < lo || x > hi) bad(name, fmt::format("{} is outside [{}, {}]", x, lo, hi));
  return x;
}

int64_t read_integer(const nlohmann::json& v, const char* name, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) bad(name, fmt::format("expected an integer, got {}", excerpt(v)));
  // Above INT64_MAX nlohmann stores it unsigned; no field takes such a value.
  const bool huge = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
  const int64_t x = huge ? INT64_MAX : v.get<int64_t>();
  if (huge || x < lo || x > hi) bad(name, fmt::format("{} is outside [{}, {}]", excerpt(v), lo, hi));
  return x;
}

bool read_bool(const nlohmann::json& v, const char* name) {
  if (!v.is_boolean()) bad(name, fmt::format("expected true or false, got {}", excerpt(v)));
  return v.get<bool>();
}

// A token id written as a JSON object key: decimal digits only, as OpenAI's examples write them.
int64_t token_id_key(const std::string& key) {
  if (key.empty() || key.size() > 10 || key.find_first_not_of("0123456789") != std::string::npos)
    bad("logit_bias", fmt::format("key \"{}\" is not a token id (a decimal number)", clip_for_message(key, 40)));
  return std::stoll(key);
}

std::vector<std::pair<int32_t, float>> read_logit_bias(const nlohmann::json& v, int64_t vocab_size) {
  if (!v.is_object()) bad("logit_bias", fmt::format("expected an object of token id -> bias, got {}", v.type_name()));
  if (v.size() > kMaxLogitBiasEntries)
    bad("logit_bias", fmt::format("at most {} entries, got {}", kMaxLogitBiasEntries, v.size()));
  std::vector<std::pair<int32_t, float>> out;
  std::set<int64_t> seen;
  for (const auto& [key, bias] : v.items()) {
    const int64_t id = token_id_key(key);
    const int64_t limit = vocab_size > 0 ? vocab_size : kInt32Max;
    if (id >= limit)
      bad("logit_bias", vocab_size > 0 ? fmt::format("token id {} is outside the vocabulary of {}", id, vocab_size)
                                       : fmt::format("token id {} is too large", id));
    // "5" and "05" are one token: the engine takes each token once.
    if (!seen.insert(id).second) bad("logit_bias", fmt::format("token id {} is given twice", id));
    if (!bias.is_number())
      bad("logit_bias", fmt::format("the bias of token {} must be a number, got {}", id, bias.type_name()));
    const double x = bias.get<double>();
    if (!std::isfinite(x) || std::abs(x) > kMaxAbsLogitBias)
      bad("logit_bias", fmt::format("the bias of token {} is {}, outside [-{}, {}]", id, excerpt(bias),
                                    kMaxAbsLogitBias, kMaxAbsLogitBias));
    out.emplace_back(static_cast<int32_t>(id), static_cast<float>(x));
  }
  return out;
}

void read_sampling(const nlohmann::json& body, RequestSpec& spec, const SamplingDefaults& defaults,
                   int64_t vocab_size) {
  SamplingParams& p = spec.sampling;
  // vLLM's order: the request, then the model's generation_config.json, then vLLM's default.
  p.temperature = defaults.temperature.value_or(1.0f);
  p.top_p = defaults.top_p.value_or(1.0f);
  p.top_k = defaults.top_k.value_or(0);
  p.min_p = defaults.min_p.value_or(0.0f);
  p.repetition_penalty = defaults.repetition_penalty.value_or(1.0f);
  if (const auto* v = field(body, "temperature")) {
    p.temperature = static_cast<float>(read_number(*v, "temperature", 0.0, 100.0));
    if (p.temperature > 0.0f && p.temperature < kMinSamplingTemperature)
      bad("temperature", fmt::format("{} is below {} (use 0 for greedy)", p.temperature, kMinSamplingTemperature));
  }
  if (const auto* v = field(body, "top_p")) {
    p.top_p = static_cast<float>(read_number(*v, "top_p", 0.0, 1.0));
    if (p.top_p <= 0.0f) bad("top_p", "must be in (0, 1]");
  }
  if (const auto* v = field(body, "top_k")) {
    const int64_t k = read_integer(*v, "top_k", -1, kInt32Max);
    p.top_k = static_cast<int32_t>(k < 0 ? 0 : k);  // -1 and 0 both mean off, as in vLLM
  }
  if (const auto* v = field(body, "min_p")) p.min_p = static_cast<float>(read_number(*v, "min_p", 0.0, 1.0));
  if (const auto* v = field(body, "seed")) {
    p.seed = read_integer(*v, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    spec.has_seed = true;
  }
  if (const auto* v = field(body, "repetition_penalty")) {
    p.repetition_penalty = static_cast<float>(read_number(*v, "repetition_penalty", 0.0, 100.0));
    if (p.repetition_penalty <= 0.0f) bad("repetition_penalty", "must be positive");
  }
  if (const auto* v = field(body, "presence_penalty"))
    p.presence_penalty = static_cast<float>(read_number(*v, "presence_penalty", -2.0, 2.0));
  if (const auto* v = field(body, "frequency_penalty"))
    p.frequency_penalty = static_cast<float>(read_number(*v, "frequency_penalty", -2.0, 2.0));
  if (const auto* v = field(body, "logprobs")) {
    if (v->is_boolean()) {
      p.num_logprobs = v->get<bool>() ? 0 : -1;
    } else {
      p.num_logprobs = static_cast<int32_t>(read_integer(*v, "logprobs", 0, kMaxLogprobs));
    }
  }
  if (const auto* v = field(body, "logit_bias")) spec.logit_bias = read_logit_bias(*v, vocab_size);
  if (const auto* v = field(body, "prompt_logprobs"))
    spec.prompt_logprobs = static_cast<int32_t>(read_integer(*v, "prompt_logprobs", 0, kMaxLogprobs));
}

void read_stop(const nlohmann::json& body, StopConditions& stop) {
  if (const auto* v = field(body, "max_tokens")) stop.max_tokens = read_integer(*v, "max_tokens", 1, kInt32Max);
  if (const auto* v = field(body, "max_completion_tokens"))
    stop.max_tokens = read_integer(*v, "max_completion_tokens", 1, kInt32Max);
  if (const auto* v = field(body, "min_tokens")) stop.min_tokens = read_integer(*v, "min_tokens", 0, kInt32Max);
  if (stop.min_tokens > stop.max_tokens)
    bad("min_tokens", fmt::format("{} is more than max_tokens {}", stop.min_tokens, stop.max_tokens));
  if (const auto* v = field(body, "stop")) {
    stop.stop.clear();
    if (v->is_string()) {
      stop.stop.push_back(v->get<std::string>());
    } else if (v->is_array()) {
      if (v->size() > kMaxStopStrings) bad("stop", fmt::format("at most {} stop strings, got {}", kMaxStopStrings, v->size()));
      for (const auto& s : *v) {
        if (!s.is_string()) bad("stop", fmt::format("expected strings, got {}", excerpt(s)));
        stop.stop.push_back(s.get<std::string>());
      }
    } else {
      bad("stop", "expected a string or a list of strings");
    }
    for (const std::string& s : stop.stop)
      if (s.empty()) bad("stop", "stop strings must not be empty");
  }
  if (const auto* v = field(body, "stop_token_ids")) {
    if (!v->is_array()) bad("stop_token_ids", "expected a list of token ids");
    if (v->size() > kMaxStopTokenIds)
      bad("stop_token_ids", fmt::format("at most {} ids, got {}", kMaxStopTokenIds, v->size()));
    stop.stop_token_ids.clear();
    for (const auto& id : *v) stop.stop_token_ids.push_back(static_cast<int32_t>(read_integer(id, "stop_token_ids", 0, kInt32Max)));
  }
  if (const auto* v = field(body, "ignore_eos")) stop.ignore_eos = read_bool(*v, "ignore_eos");
  if (const auto* v = field(body, "include_stop_str_in_output"))
    stop.include_stop_str_in_output = read_bool(*v, "include_stop_str_in_output");
  if (const auto* v = field(body, "skip_special_tokens")) stop.skip_special_tokens = read_bool(*v, "skip_special_tokens");
}

}  // namespace

const std::vector<std::string_view>& request_field_names() {
  static const std::vector<std::string_view> names = {
      "max_tokens", "max_completion_tokens", "min_tokens", "stop", "stop_token_ids", "ignore_eos",
      "include_stop_str_in_output", "skip_special_tokens", "temperature", "top_p", "top_k", "min_p", "seed",
      "repetition_penalty", "presence_penalty", "frequency_penalty", "logprobs", "logit_bias", "prompt_logprobs",
      "priority"};
  static const std::vector<std::string_view> all = [] {
    std::vector<std::string_view> out = names;
    for (std::string_view name : structured_output_field_names()) out.push_back(name);
    return out;
  }();
  return all;
}

void read_request_fields(const nlohmann::json& body, RequestSpec& spec, const SamplingDefaults& defaults,
                         int64_t vocab_size) {
  if (!body.is_object()) throw RequestFieldError("", "the request must be a JSON object");
  read_stop(body, spec.stop);
  read_sampling(body, spec, defaults, vocab_size);
  if (const auto* v = field(body, "priority"))
    spec.priority =
        read_integer(*v, "priority", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  spec.structured_output = read_structured_output(body);
}

}  // namespace fg
