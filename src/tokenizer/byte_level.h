// tokenizer/byte_level.h — the GPT-2 "byte-level" alphabet: a bijection between the 256 byte
// values and 256 printable code points, so that any byte string can be spelled as vocabulary text.
// Printable Latin-1 bytes stand for themselves; the other 68 bytes map to U+0100 upwards in order.
//
// fullgraph's byte-level BPE works on raw bytes (the vocabulary is translated once at load), so
// this mapping is needed only at load and when decoding tokens back to bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fg::byte_level {

// The code point that spells byte `b`.
uint32_t byte_to_code_point(uint8_t b);
// The byte that code point `cp` spells, or -1 when `cp` is not in the alphabet.
int code_point_to_byte(uint32_t cp);

// Spells raw bytes in the alphabet (as UTF-8 text).
std::string spell(std::string_view raw);
// The raw bytes spelled by `text` (valid UTF-8), or nullopt if a character is not in the alphabet.
std::optional<std::string> unspell(std::string_view text);

}  // namespace fg::byte_level
