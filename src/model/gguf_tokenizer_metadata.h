// model/gguf_tokenizer_metadata.h — the tokenizer.* keys of a GGUF file read into the plain values
// tokenizer/gguf_tokenizer.h builds a tokenizer from (tokenizer/ sits below model/ and cannot read
// GgufMetadata itself).
#pragma once

#include <string>

#include "model/gguf_metadata.h"
#include "tokenizer/gguf_tokenizer.h"

namespace fg {

// Reads the keys; a key of the wrong type fails naming it. Absent optional keys stay empty.
GgufTokenizerSpec gguf_tokenizer_spec(const GgufMetadata& metadata);

// Opens `path` and builds its tokenizer, chat template and special ids.
GgufTokenizer load_gguf_tokenizer(const std::string& path);

}  // namespace fg
