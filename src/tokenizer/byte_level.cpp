// tokenizer/byte_level.cpp — the byte-level alphabet tables (see byte_level.h).
#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace fg::byte_level {

namespace {

bool stands_for_itself(unsigned b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 324> to_byte{};  // code points 0..323 cover the whole alphabet
  Tables() {
    to_byte.fill(-1);
    uint32_t next_extra = 256;
    for (unsigned b = 0; b < 256; ++b) {
      to_cp[b] = stands_for_itself(b) ? b : next_extra++;
      to_byte[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;  // immutable after construction: a lookup table, not state
  return t;
}

}  // namespace

uint32_t byte_to_code_point(uint8_t b) { return tables().to_cp[b]; }

int code_point_to_byte(uint32_t cp) { return cp < tables().to_byte.size() ? tables().to_byte[cp] : -1; }

std::string spell(std::string_view raw) {
  std::string out;
  out.reserve(raw.size() * 2);
  for (char c : raw) utf8::append_code_point(out, byte_to_code_point(static_cast<uint8_t>(c)));
  return out;
}

std::optional<std::string> unspell(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const int b = code_point_to_byte(utf8::next_code_point(text, pos));
    if (b < 0) return std::nullopt;
    out.push_back(static_cast<char>(b));
  }
  return out;
}

}  // namespace fg::byte_level
