// core/utf8.h — UTF-8 well-formedness, the one definition every layer checks text against: the
// JSON layer (so that no message quotes broken bytes), safetensors names, and the tokenizer
// (tokenizer/utf8.h adds code points, White_Space and lossy decoding on top of this).
#pragma once

#include <cstddef>
#include <string_view>

namespace fg::utf8 {

// How many bytes starting at s[pos] form a well-formed prefix of a sequence (at least 1 when the
// lead byte can start one, 0 when it cannot), and whether the whole sequence is present. Lossy
// decoding cuts ill-formed input at exactly these maximal subparts.
size_t well_formed_prefix(std::string_view s, size_t pos, bool& complete);

// Length of the valid UTF-8 sequence that starts at s[pos], or 0 if the bytes there are not one.
size_t valid_sequence_length(std::string_view s, size_t pos);

// Byte offset of the first byte that is not part of a valid sequence, or npos when `s` is valid.
size_t first_invalid(std::string_view s);
inline bool is_valid(std::string_view s) { return first_invalid(s) == std::string_view::npos; }

// The longest prefix of `s` of at most `max_bytes` that does not cut a valid sequence in two.
std::string_view whole_prefix(std::string_view s, size_t max_bytes);

}  // namespace fg::utf8
