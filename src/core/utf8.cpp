// core/utf8.cpp — UTF-8 well-formedness (see utf8.h).
//
// Well-formedness follows the Unicode standard's table 3-7 (no overlongs, no surrogates, nothing
// past U+10FFFF).
#include "core/utf8.h"

#include <cstdint>

namespace fg::utf8 {

namespace {

// For a lead byte: the number of bytes of the sequence and the allowed range of the second byte
// (the only position whose range depends on the lead byte); 0 for bytes that cannot lead.
struct LeadInfo {
  uint8_t length;
  uint8_t second_lo;
  uint8_t second_hi;
};

constexpr LeadInfo lead_info(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b < 0xC2) return {0, 0, 0};
  if (b < 0xE0) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b < 0xF0) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b < 0xF4) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

}  // namespace

size_t well_formed_prefix(std::string_view s, size_t pos, bool& complete) {
  const auto lead = static_cast<uint8_t>(s[pos]);
  const LeadInfo info = lead_info(lead);
  complete = false;
  if (info.length == 0) return 0;
  if (info.length == 1) {
    complete = true;
    return 1;
  }
  size_t n = 1;
  for (; n < info.length; ++n) {
    if (pos + n >= s.size()) return n;
    const auto b = static_cast<uint8_t>(s[pos + n]);
    const uint8_t lo = n == 1 ? info.second_lo : 0x80, hi = n == 1 ? info.second_hi : 0xBF;
    if (b < lo || b > hi) return n;
  }
  complete = true;
  return n;
}

size_t valid_sequence_length(std::string_view s, size_t pos) {
  bool complete = false;
  const size_t n = well_formed_prefix(s, pos, complete);
  return complete ? n : 0;
}

size_t first_invalid(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    // ASCII runs dominate real text; skip them eight bytes at a time.
    while (pos + 8 <= s.size()) {
      uint64_t word = 0;
      for (int i = 0; i < 8; ++i) word |= static_cast<uint64_t>(static_cast<uint8_t>(s[pos + i])) << (8 * i);
      if (word & 0x8080808080808080ull) break;
      pos += 8;
    }
    if (pos >= s.size()) break;
    const size_t n = valid_sequence_length(s, pos);
    if (n == 0) return pos;
    pos += n;
  }
  return std::string_view::npos;
}

std::string_view whole_prefix(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<uint8_t>(s[cut]) & 0xC0) == 0x80) --cut;  // s[cut] starts the next sequence
  return s.substr(0, cut);
}

}  // namespace fg::utf8
