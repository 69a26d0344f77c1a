// tokenizer/utf8.h — the UTF-8 rules the tokenizer relies on: validation (core/utf8.h, shared
// with every layer), code point iteration, Unicode White_Space, and lossy decoding with exactly
// the replacement policy of Rust's String::from_utf8_lossy (one U+FFFD per maximal ill-formed
// subpart), which is what Hugging Face `tokenizers` applies when decoded bytes are not valid UTF-8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/utf8.h"

namespace fg::utf8 {

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Decodes the code point at s[pos] (which must start a valid sequence) and advances pos.
uint32_t next_code_point(std::string_view s, size_t& pos);
// Decodes the code point that ends at s[end] (exclusive) in a valid string; sets `begin`.
uint32_t previous_code_point(std::string_view s, size_t end, size_t& begin);

void append_code_point(std::string& out, uint32_t cp);

// Number of code points of valid UTF-8 `s`.
size_t count_code_points(std::string_view s);

// Unicode White_Space (what Rust's char::is_whitespace and `\s` of its regex crate accept).
bool is_white_space(uint32_t cp);

// Appends `bytes` to `out`, replacing ill-formed parts the way from_utf8_lossy does.
void append_lossy(std::string& out, std::string_view bytes);
inline std::string lossy(std::string_view bytes) {
  std::string out;
  append_lossy(out, bytes);
  return out;
}

// Length of the trailing bytes of `s` that form an incomplete (so far well-formed) sequence: the
// bytes a streaming decoder must hold back because the next bytes may complete them.
size_t incomplete_tail_length(std::string_view s);

}  // namespace fg::utf8
