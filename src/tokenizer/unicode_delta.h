// tokenizer/unicode_delta.h — general-category code points that Unicode 16.0 (Hugging Face's regex
// engine) has and PCRE2 10.42 (Unicode 14.0) lacks; see unicode_delta.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace fg {

struct CodeRange {
  uint32_t first;
  uint32_t last;  // inclusive
};

// The code points to add to PCRE2's \p{category} to get Unicode 16.0's, for a general category
// name such as "L" or "Nd"; nullopt for names this cannot widen exactly (scripts, Mn, C, Cn...).
std::optional<std::span<const CodeRange>> unicode16_additions(std::string_view category);

}  // namespace fg
