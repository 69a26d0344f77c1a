// model/gguf_tokenizer_metadata.cpp — see gguf_tokenizer_metadata.h.
#include "model/gguf_tokenizer_metadata.h"

#include <algorithm>

#include "model/gguf.h"

namespace fg {

namespace {

std::optional<int64_t> optional_int(const GgufMetadata& m, const std::string& key) {
  return m.contains(key) ? std::optional<int64_t>(m.get_int(key)) : std::nullopt;
}

std::optional<bool> optional_bool(const GgufMetadata& m, const std::string& key) {
  return m.contains(key) ? std::optional<bool>(m.get_bool(key)) : std::nullopt;
}

}  // namespace

GgufTokenizerSpec gguf_tokenizer_spec(const GgufMetadata& m) {
  GgufTokenizerSpec s;
  s.model = m.get_string("tokenizer.ggml.model");
  s.pre = m.get_string("tokenizer.ggml.pre", "");
  s.tokens = m.get_string_array("tokenizer.ggml.tokens");
  if (m.contains("tokenizer.ggml.scores"))
    for (const double score : m.get_float_array("tokenizer.ggml.scores")) s.scores.push_back(static_cast<float>(score));
  if (m.contains("tokenizer.ggml.token_type"))
    for (const int64_t type : m.get_int_array("tokenizer.ggml.token_type"))
      s.token_types.push_back(static_cast<int32_t>(std::clamp<int64_t>(type, -1, 7)));  // still out of 0..6, so refused there, without wrapping into range
  if (m.contains("tokenizer.ggml.merges")) s.merges = m.get_string_array("tokenizer.ggml.merges");
  s.bos_id = optional_int(m, "tokenizer.ggml.bos_token_id");
  s.eos_id = optional_int(m, "tokenizer.ggml.eos_token_id");
  s.eot_id = optional_int(m, "tokenizer.ggml.eot_token_id");
  s.eom_id = optional_int(m, "tokenizer.ggml.eom_token_id");
  s.unk_id = optional_int(m, "tokenizer.ggml.unknown_token_id");
  s.pad_id = optional_int(m, "tokenizer.ggml.padding_token_id");
  s.add_bos = optional_bool(m, "tokenizer.ggml.add_bos_token");
  s.add_eos = optional_bool(m, "tokenizer.ggml.add_eos_token");
  s.add_space_prefix = optional_bool(m, "tokenizer.ggml.add_space_prefix");
  s.chat_template = m.get_string("tokenizer.chat_template", "");
  return s;
}

GgufTokenizer load_gguf_tokenizer(const std::string& path) {
  const auto file = GgufFile::open(path);
  return tokenizer_from_gguf(gguf_tokenizer_spec(file->metadata()), path);
}

}  // namespace fg
