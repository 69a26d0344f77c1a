// tokenizer/builtin_tokenizer.h — the tokenizer and chat template of the built-in default model,
// so that text generation runs with nothing downloaded (see scripts/make_builtin_tokenizer.py).
#pragma once

#include <string>

namespace fg {

// tokenizer.json text: a 512-token byte-level BPE (ids 510/511: <|begin_of_text|>/<|end_of_text|>).
const char* builtin_tokenizer_json();
// A plain "role: content" chat template for it.
const char* builtin_chat_template();

}  // namespace fg
