// model/generation_config.cpp — see generation_config.h.
#include "model/generation_config.h"

#include <fmt/format.h>

#include <filesystem>
#include <limits>

#include "core/error.h"
#include "core/json/strict_json.h"
#include "sampling/sampling_params.h"

namespace fg {

namespace {

// The ranges are the request fields' (engine/request_json.cpp), so that a default is always a
// value a request could have sent.
float read_float(const JsonView& v, double lo, double hi, bool lo_open) {
  const double x = v.as_number();
  if (x < lo || x > hi || (lo_open && x == lo))
    v.fail_expected(fmt::format("a number in {}{}, {}]", lo_open ? "(" : "[", lo, hi));
  return static_cast<float>(x);
}

SamplingDefaults read_sampling(const JsonView& root) {
  SamplingDefaults d;
  if (const auto v = root.get_non_null("temperature")) {
    d.temperature = read_float(*v, 0.0, 100.0, /*lo_open=*/false);
    if (*d.temperature > 0.0f && *d.temperature < kMinSamplingTemperature)
      v->fail("{} is below {} (0 means greedy)", *d.temperature, kMinSamplingTemperature);
  }
  if (const auto v = root.get_non_null("top_p")) d.top_p = read_float(*v, 0.0, 1.0, /*lo_open=*/true);
  if (const auto v = root.get_non_null("top_k")) {
    const int64_t k = v->as_int(-1, std::numeric_limits<int32_t>::max());
    d.top_k = static_cast<int32_t>(k < 0 ? 0 : k);  // -1 and 0 both mean off, as in vLLM
  }
  if (const auto v = root.get_non_null("min_p")) d.min_p = read_float(*v, 0.0, 1.0, /*lo_open=*/false);
  if (const auto v = root.get_non_null("repetition_penalty"))
    d.repetition_penalty = read_float(*v, 0.0, 100.0, /*lo_open=*/true);
  if (const auto v = root.get_non_null("max_new_tokens"))
    d.max_tokens = v->as_int(1, std::numeric_limits<int32_t>::max());
  return d;
}

std::vector<int32_t> read_eos_ids(const JsonView& root) {
  std::vector<int32_t> ids;
  const std::optional<JsonView> eos = root.get_non_null("eos_token_id");
  if (!eos) return ids;
  const auto take = [&](const JsonView& id) {
    ids.push_back(static_cast<int32_t>(id.as_int(0, std::numeric_limits<int32_t>::max())));
  };
  if (eos->raw().is_array()) {
    for (size_t i = 0; i < eos->size(); ++i) take(eos->item(i));
  } else {
    take(*eos);
  }
  return ids;
}

GenerationDefaults from_document(const JsonDocument& document, GenerationConfigMode mode) {
  GenerationDefaults out;
  // Not an object: nothing to read (the eos reader this replaced was as lenient).
  if (!document.value.is_object()) return out;
  const JsonView root = document.root();
  out.eos_token_ids = read_eos_ids(root);
  // Read under both modes, so that a bad value fails the same way whichever is chosen.
  SamplingDefaults sampling = read_sampling(root);
  if (mode == GenerationConfigMode::kAuto) out.sampling = sampling;
  return out;
}

}  // namespace

std::string SamplingDefaults::describe() const {
  std::string out;
  const auto add = [&out](const char* name, const std::string& value) {
    out += fmt::format("{}{}={}", out.empty() ? "" : ", ", name, value);
  };
  if (temperature) add("temperature", fmt::format("{}", *temperature));
  if (top_p) add("top_p", fmt::format("{}", *top_p));
  if (top_k) add("top_k", fmt::format("{}", *top_k));
  if (min_p) add("min_p", fmt::format("{}", *min_p));
  if (repetition_penalty) add("repetition_penalty", fmt::format("{}", *repetition_penalty));
  if (max_tokens) add("max_tokens", fmt::format("{}", *max_tokens));
  return out;
}

GenerationConfigMode parse_generation_config_mode(std::string_view name) {
  if (name == "auto") return GenerationConfigMode::kAuto;
  if (name == "vllm") return GenerationConfigMode::kVllm;
  fail("--generation-config: unknown mode '{}' (expected auto: the model's generation_config.json, or vllm: "
       "vLLM's neutral defaults)",
       clip_for_message(name, 80));
}

GenerationDefaults parse_generation_defaults(std::string_view text, const std::string& source,
                                             GenerationConfigMode mode) {
  return from_document(parse_strict_json(text, JsonSource{source, ""}), mode);
}

GenerationDefaults read_generation_defaults(const std::string& model_dir, GenerationConfigMode mode) {
  if (model_dir.empty()) return {};
  const std::filesystem::path path = std::filesystem::path(model_dir) / "generation_config.json";
  if (!std::filesystem::exists(path)) return {};
  return from_document(read_json_file(path.string()), mode);
}

}  // namespace fg
