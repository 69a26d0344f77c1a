// tokenizer/utf8.cpp — UTF-8 iteration and lossy decoding (see utf8.h).
//
// Well-formedness is core/utf8's (the Unicode standard's table 3-7); the lossy decoder cuts
// ill-formed input into the maximal subparts core/utf8 finds, so a truncated but otherwise
// well-formed sequence costs one U+FFFD and a stray byte costs one.
#include "tokenizer/utf8.h"

namespace fg::utf8 {

uint32_t next_code_point(std::string_view s, size_t& pos) {
  const auto b0 = static_cast<uint8_t>(s[pos]);
  if (b0 < 0x80) {
    ++pos;
    return b0;
  }
  const size_t n = b0 < 0xE0 ? 2 : b0 < 0xF0 ? 3 : 4;
  uint32_t cp = b0 & (0x7F >> n);
  for (size_t i = 1; i < n; ++i) cp = (cp << 6) | (static_cast<uint8_t>(s[pos + i]) & 0x3F);
  pos += n;
  return cp;
}

uint32_t previous_code_point(std::string_view s, size_t end, size_t& begin) {
  begin = end - 1;
  while (begin > 0 && (static_cast<uint8_t>(s[begin]) & 0xC0) == 0x80) --begin;
  size_t p = begin;
  return next_code_point(s, p);
}

void append_code_point(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool is_white_space(uint32_t cp) {
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  if (cp < 0x85) return false;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

void append_lossy(std::string& out, std::string_view bytes) {
  size_t pos = 0, run_start = 0;
  while (pos < bytes.size()) {
    bool complete = false;
    const size_t n = well_formed_prefix(bytes, pos, complete);
    if (complete) {
      pos += n;
      continue;
    }
    out.append(bytes.substr(run_start, pos - run_start));
    out.append(kReplacement);
    pos += n == 0 ? 1 : n;  // a maximal ill-formed subpart is the well-formed prefix, or one byte
    run_start = pos;
  }
  out.append(bytes.substr(run_start));
}

size_t count_code_points(std::string_view s) {
  size_t n = 0;
  for (const unsigned char c : s) n += (c & 0xC0) != 0x80;  // every code point has one lead byte
  return n;
}

size_t incomplete_tail_length(std::string_view s) {
  // A sequence is at most 4 bytes, so only the last 3 bytes can start an incomplete one.
  const size_t lo = s.size() >= 3 ? s.size() - 3 : 0;
  for (size_t start = s.size(); start-- > lo;) {
    const auto b = static_cast<uint8_t>(s[start]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: look further left for the lead
    bool complete = false;
    const size_t n = well_formed_prefix(s, start, complete);
    return (!complete && n == s.size() - start && n > 0) ? n : 0;
  }
  return 0;
}

}  // namespace fg::utf8
