// model/generation_config.h — what a model folder's generation_config.json says about generation:
// the end-of-sequence ids, and the sampling defaults its authors chose (e.g. Llama-3.1-Instruct's
// temperature 0.6, top_p 0.9), which vLLM applies to every request field left unset.
//
// vLLM's set, and only it, is read: temperature, top_p, top_k, min_p, repetition_penalty, and
// max_new_tokens (the default max_tokens where a request has no default of its own: chat). Other
// keys (do_sample, num_beams, ...) are ignored as vLLM ignores them. Values are checked against
// the ranges a request may use, so a bad file fails at start-up, naming the file and the key,
// rather than turning every request into a 400.
//
// --generation-config auto (vLLM's default) applies the file's sampling defaults; vllm ignores
// them (vLLM's neutral defaults). The eos ids are read under both, as vLLM reads them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fg {

// Defaults for the sampling fields a request omits; unset: the OpenAI/vLLM default.
struct SamplingDefaults {
  std::optional<float> temperature;
  std::optional<float> top_p;
  std::optional<int32_t> top_k;  // 0 = off (the file's -1 reads as 0)
  std::optional<float> min_p;
  std::optional<float> repetition_penalty;
  std::optional<int64_t> max_tokens;  // generation_config.json's max_new_tokens

  bool empty() const {
    return !temperature && !top_p && !top_k && !min_p && !repetition_penalty && !max_tokens;
  }
  // "temperature=0.6, top_p=0.9" (the set ones), for the start-up log; "" when empty.
  std::string describe() const;
};

struct GenerationDefaults {
  SamplingDefaults sampling;
  std::vector<int32_t> eos_token_ids;  // eos_token_id (an int or a list), [] when absent
};

enum class GenerationConfigMode { kAuto, kVllm };

// "auto" or "vllm"; throws fg::Error naming --generation-config and the choices otherwise.
GenerationConfigMode parse_generation_config_mode(std::string_view name);

// Reads `model_dir`/generation_config.json; an empty `model_dir` or a folder without the file
// gives no defaults. Under kVllm the sampling defaults are dropped, the eos ids kept. Throws
// fg::Error naming the file and the key for a value out of range.
GenerationDefaults read_generation_defaults(const std::string& model_dir,
                                            GenerationConfigMode mode = GenerationConfigMode::kAuto);

// The same from the file's text; `source` names it in errors (for tests).
GenerationDefaults parse_generation_defaults(std::string_view text, const std::string& source,
                                             GenerationConfigMode mode = GenerationConfigMode::kAuto);

}  // namespace fg
