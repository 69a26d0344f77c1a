// tokenizer/gguf_pre_tokenizer.h — the pre-tokenizer of a byte-level (gpt2) GGUF vocabulary, chosen
// by tokenizer.ggml.pre, as tokenizer.json would spell it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace fg {

// The tokenizer.json "pre_tokenizer" for `pre` (empty means "default"); fails naming `pre` and the
// supported names when llama.cpp's split for it is not known here. `source` names the file.
nlohmann::json gguf_byte_level_pre_tokenizer(std::string_view pre, const std::string& source);

}  // namespace fg
