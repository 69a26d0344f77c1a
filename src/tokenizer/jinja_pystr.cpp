// tokenizer/jinja_pystr.cpp — Python `str` semantics over UTF-8 (see jinja_pystr.h).
//
// Most operations decode to UTF-32, work on code points exactly as CPython's unicodeobject.c
// does, and encode back; chat-template strings are small, so clarity wins over speed here.
// Case mapping uses utf8proc's simple mappings plus the two full mappings a prompt is likely to
// meet (German sharp s, Greek final sigma).
#include "tokenizer/jinja_pystr.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "tokenizer/jinja_error.h"
#include "tokenizer/utf8.h"

namespace fg::jinja::pystr {

namespace {

constexpr char32_t kEscapeBase = 0xDC00;  // surrogateescape: bad byte b -> U+DC00 + b

int category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

std::u32string decode_chars(const std::optional<std::string>& chars) {
  return chars ? decode(*chars) : std::u32string();
}

// Python's ADJUST_INDICES for the optional start/end of find, count, startswith.
void adjust(Span span, int64_t len, int64_t& start, int64_t& end) {
  start = span.start.value_or(0);
  end = span.end.value_or(len);
  if (end > len) {
    end = len;
  } else if (end < 0) {
    end = std::max<int64_t>(end + len, 0);
  }
  if (start < 0) start = std::max<int64_t>(start + len, 0);
}

bool matches_at(const std::u32string& s, const std::u32string& sub, int64_t at) {
  return std::equal(sub.begin(), sub.end(), s.begin() + at);
}

void append_lower(std::u32string& out, const std::u32string& s, size_t i) {
  const char32_t c = s[i];
  if (c == 0x03A3) {  // Greek capital sigma: final form when it ends a word
    const bool after_cased = i > 0 && is_cased(s[i - 1]);
    const bool before_cased = i + 1 < s.size() && is_cased(s[i + 1]);
    out.push_back(after_cased && !before_cased ? 0x03C2 : 0x03C3);
    return;
  }
  if (c == 0x0130) {  // capital I with dot: i + combining dot above
    out.append(U"i\u0307");
    return;
  }
  out.push_back(c < 0x80 ? static_cast<char32_t>(c >= 'A' && c <= 'Z' ? c + 32 : c)
                         : static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
}

void append_upper(std::u32string& out, char32_t c) {
  if (c == 0x00DF) {  // sharp s has no single-character capital in str.upper()
    out.append(U"SS");
    return;
  }
  out.push_back(c < 0x80 ? static_cast<char32_t>(c >= 'a' && c <= 'z' ? c - 32 : c)
                         : static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c))));
}

void append_title(std::u32string& out, char32_t c) {
  if (c == 0x00DF) {
    out.append(U"Ss");
    return;
  }
  out.push_back(c < 0x80 ? static_cast<char32_t>(c >= 'a' && c <= 'z' ? c - 32 : c)
                         : static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c))));
}

}  // namespace

std::u32string decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  // utf8.h rejects exactly what Python's strict decoder rejects (overlongs, surrogates, past
  // U+10FFFF, truncation), one byte at a time, so each rejected byte is one surrogateescape.
  for (size_t i = 0; i < s.size();) {
    if (utf8::valid_sequence_length(s, i) == 0) {
      out.push_back(kEscapeBase + static_cast<unsigned char>(s[i]));
      ++i;
    } else {
      out.push_back(utf8::next_code_point(s, i));
    }
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp >= kEscapeBase + 0x80 && cp <= kEscapeBase + 0xFF) {
    out.push_back(static_cast<char>(cp - kEscapeBase));
  } else {
    utf8::append_code_point(out, cp);
  }
}

std::string encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

int64_t length(std::string_view s) {
  if (is_ascii(s)) return static_cast<int64_t>(s.size());
  return static_cast<int64_t>(decode(s).size());
}

bool is_space(char32_t c) {
  if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_line_break(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E || c == 0x85 ||
         c == 0x2028 || c == 0x2029;
}

bool is_printable(char32_t c) {
  if (c < 0x80) return c >= 0x20 && c < 0x7F;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return !(c >= kEscapeBase + 0x80 && c <= kEscapeBase + 0xFF);
  }
}

bool is_alpha(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  const int k = category(c);
  return k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO;
}

bool is_decimal(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return category(c) == UTF8PROC_CATEGORY_ND;
}

bool is_digit(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  // Superscript and circled digits are Numeric_Type=Digit; No is the close enough category.
  const int k = category(c);
  return k == UTF8PROC_CATEGORY_ND ||
         (k == UTF8PROC_CATEGORY_NO &&
          (c == 0xB2 || c == 0xB3 || c == 0xB9 || (c >= 0x2070 && c <= 0x2089) || (c >= 0x2460 && c <= 0x2468)));
}

bool is_alnum(char32_t c) {
  if (c < 0x80) return is_alpha(c) || is_decimal(c);
  const int k = category(c);
  return (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO) ||
         (k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO);
}

bool is_cased(char32_t c) {
  if (c < 0x80) return is_alpha(c);
  const int k = category(c);
  return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT;
}

bool is_lower_char(char32_t c) { return c < 0x80 ? (c >= 'a' && c <= 'z') : category(c) == UTF8PROC_CATEGORY_LL; }
bool is_upper_char(char32_t c) {
  if (c < 0x80) return c >= 'A' && c <= 'Z';
  const int k = category(c);
  return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LT;
}

std::string upper(std::string_view s) {
  const std::u32string in = decode(s);
  std::u32string out;
  out.reserve(in.size());
  for (char32_t c : in) append_upper(out, c);
  return encode(out);
}

std::string lower(std::string_view s) {
  const std::u32string in = decode(s);
  std::u32string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) append_lower(out, in, i);
  return encode(out);
}

std::string title(std::string_view s) {
  const std::u32string in = decode(s);
  std::u32string out;
  bool previous_cased = false;
  for (size_t i = 0; i < in.size(); ++i) {
    if (previous_cased) {
      append_lower(out, in, i);
    } else {
      append_title(out, in[i]);
    }
    previous_cased = is_cased(in[i]);
  }
  return encode(out);
}

std::string capitalize(std::string_view s) {
  const std::u32string in = decode(s);
  std::u32string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (i == 0) {
      append_title(out, in[i]);
    } else {
      append_lower(out, in, i);
    }
  }
  return encode(out);
}

std::string swapcase(std::string_view s) {
  const std::u32string in = decode(s);
  std::u32string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (is_upper_char(in[i])) {
      append_lower(out, in, i);
    } else if (is_lower_char(in[i])) {
      append_upper(out, in[i]);
    } else {
      out.push_back(in[i]);
    }
  }
  return encode(out);
}

bool is_lower(std::string_view s) {
  bool cased = false;
  for (char32_t c : decode(s)) {
    if (is_upper_char(c)) return false;
    cased = cased || is_lower_char(c);
  }
  return cased;
}

bool is_upper(std::string_view s) {
  bool cased = false;
  for (char32_t c : decode(s)) {
    if (is_lower_char(c)) return false;
    cased = cased || is_upper_char(c);
  }
  return cased;
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  const std::u32string in = decode(s);
  const std::u32string set = decode_chars(chars);
  auto strippable = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_space(c); };
  size_t begin = 0, end = in.size();
  if (left)
    while (begin < end && strippable(in[begin])) ++begin;
  if (right)
    while (end > begin && strippable(in[end - 1])) --end;
  return encode(std::u32string_view(in).substr(begin, end - begin));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> parts;
  if (maxsplit < 0) maxsplit = INT64_MAX;
  if (sep) {
    if (sep->empty()) raise("empty separator");
    size_t start = 0;
    while (maxsplit-- > 0) {
      const size_t at = s.find(*sep, start);
      if (at == std::string_view::npos) break;
      parts.emplace_back(s.substr(start, at - start));
      start = at + sep->size();
    }
    parts.emplace_back(s.substr(start));
    return parts;
  }
  const std::u32string in = decode(s);
  size_t i = 0;
  const size_t n = in.size();
  while (true) {
    while (i < n && is_space(in[i])) ++i;
    if (i == n) break;
    if (maxsplit-- <= 0) {
      // Python keeps the remainder as is, trailing whitespace included.
      parts.push_back(encode(std::u32string_view(in).substr(i)));
      break;
    }
    size_t j = i;
    while (j < n && !is_space(in[j])) ++j;
    parts.push_back(encode(std::u32string_view(in).substr(i, j - i)));
    i = j;
  }
  return parts;
}

std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> parts;
  if (maxsplit < 0) maxsplit = INT64_MAX;
  if (sep) {
    if (sep->empty()) raise("empty separator");
    size_t end = s.size();
    while (maxsplit-- > 0 && end >= sep->size()) {
      const size_t at = s.rfind(*sep, end - sep->size());
      if (at == std::string_view::npos) break;
      parts.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
      end = at;
    }
    parts.emplace_back(s.substr(0, end));
    std::reverse(parts.begin(), parts.end());
    return parts;
  }
  const std::u32string in = decode(s);
  size_t j = in.size();
  while (true) {
    while (j > 0 && is_space(in[j - 1])) --j;
    if (j == 0) break;
    if (maxsplit-- <= 0) {
      parts.push_back(encode(std::u32string_view(in).substr(0, j)));
      break;
    }
    size_t i = j;
    while (i > 0 && !is_space(in[i - 1])) --i;
    parts.push_back(encode(std::u32string_view(in).substr(i, j - i)));
    j = i;
  }
  std::reverse(parts.begin(), parts.end());
  return parts;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  const std::u32string in = decode(s);
  std::vector<std::string> lines;
  size_t i = 0;
  while (i < in.size()) {
    size_t j = i;
    while (j < in.size() && !is_line_break(in[j])) ++j;
    size_t eol = j;
    if (j < in.size()) {
      eol = (in[j] == '\r' && j + 1 < in.size() && in[j + 1] == '\n') ? j + 2 : j + 1;
    }
    lines.push_back(encode(std::u32string_view(in).substr(i, (keepends ? eol : j) - i)));
    i = eol;
  }
  return lines;
}

std::string replace(std::string_view s, std::string_view old, std::string_view with, int64_t count) {
  if (count < 0) count = INT64_MAX;
  std::string out;
  if (old.empty()) {
    // Python inserts `with` before every code point and at the end, up to `count` times.
    const std::u32string in = decode(s);
    for (char32_t c : in) {
      if (count > 0) {
        out.append(with);
        --count;
      }
      append_utf8(out, c);
    }
    if (count > 0) out.append(with);
    return out;
  }
  size_t start = 0;
  while (count-- > 0) {
    const size_t at = s.find(old, start);
    if (at == std::string_view::npos) break;
    out.append(s.substr(start, at - start));
    out.append(with);
    start = at + old.size();
  }
  out.append(s.substr(start));
  return out;
}

int64_t find(std::string_view s, std::string_view sub, Span span, bool reverse) {
  const std::u32string in = decode(s), needle = decode(sub);
  int64_t start, end;
  adjust(span, static_cast<int64_t>(in.size()), start, end);
  const auto m = static_cast<int64_t>(needle.size());
  if (end - start < m) return -1;
  if (reverse) {
    for (int64_t at = end - m; at >= start; --at)
      if (matches_at(in, needle, at)) return at;
  } else {
    for (int64_t at = start; at + m <= end; ++at)
      if (matches_at(in, needle, at)) return at;
  }
  return -1;
}

int64_t count(std::string_view s, std::string_view sub, Span span) {
  const std::u32string in = decode(s), needle = decode(sub);
  int64_t start, end;
  adjust(span, static_cast<int64_t>(in.size()), start, end);
  if (end < start) return 0;
  const auto m = static_cast<int64_t>(needle.size());
  if (m == 0) return end - start + 1;
  int64_t n = 0;
  for (int64_t at = start; at + m <= end;) {
    if (matches_at(in, needle, at)) {
      ++n;
      at += m;
    } else {
      ++at;
    }
  }
  return n;
}

bool startswith(std::string_view s, std::string_view prefix, Span span) {
  const std::u32string in = decode(s), p = decode(prefix);
  int64_t start, end;
  adjust(span, static_cast<int64_t>(in.size()), start, end);
  if (start > static_cast<int64_t>(in.size())) return false;
  if (end - start < static_cast<int64_t>(p.size())) return false;
  return matches_at(in, p, start);
}

bool endswith(std::string_view s, std::string_view suffix, Span span) {
  const std::u32string in = decode(s), p = decode(suffix);
  int64_t start, end;
  adjust(span, static_cast<int64_t>(in.size()), start, end);
  if (start > static_cast<int64_t>(in.size())) return false;
  if (end - start < static_cast<int64_t>(p.size())) return false;
  return matches_at(in, p, end - static_cast<int64_t>(p.size()));
}

std::string repr(std::string_view s) {
  const std::u32string in = decode(s);
  const bool has_single = in.find(U'\'') != std::u32string::npos;
  const bool has_double = in.find(U'"') != std::u32string::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back(quote);
  for (char32_t c : in) {
    if (c == static_cast<char32_t>(quote) || c == U'\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == U'\t') {
      out.append("\\t");
    } else if (c == U'\n') {
      out.append("\\n");
    } else if (c == U'\r') {
      out.append("\\r");
    } else if (c < 0x20 || c == 0x7F) {
      out.append(fmt::format("\\x{:02x}", static_cast<unsigned>(c)));
    } else if (c < 0x7F || is_printable(c)) {
      append_utf8(out, c);
    } else if (c <= 0xFF) {
      out.append(fmt::format("\\x{:02x}", static_cast<unsigned>(c)));
    } else if (c <= 0xFFFF) {
      out.append(fmt::format("\\u{:04x}", static_cast<unsigned>(c)));
    } else {
      out.append(fmt::format("\\U{:08x}", static_cast<unsigned>(c)));
    }
  }
  out.push_back(quote);
  return out;
}

std::optional<double> to_float(std::string_view text) {
  const std::string s = strip(text, std::nullopt, true, true);
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (i == 0 || i + 1 >= s.size() || !isdigit(static_cast<unsigned char>(s[i - 1])) ||
          !isdigit(static_cast<unsigned char>(s[i + 1])))
        return std::nullopt;
      continue;
    }
    clean.push_back(s[i]);
  }
  if (clean.empty()) return std::nullopt;
  std::string lowered = lower(clean);
  const size_t sign = (lowered[0] == '+' || lowered[0] == '-') ? 1 : 0;
  const std::string body = lowered.substr(sign);
  if (body == "inf" || body == "infinity" || body == "nan") {
    const double x = body == "nan" ? NAN : INFINITY;
    return lowered[0] == '-' ? -x : x;
  }
  if (body.find_first_not_of("0123456789.e+-") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(clean.c_str(), &end);
  if (end != clean.c_str() + clean.size()) return std::nullopt;
  return d;
}

std::optional<int64_t> to_int(std::string_view text, int64_t base) {
  if (base != 0 && (base < 2 || base > 36)) raise("int() base must be >= 2 and <= 36, or 0");
  const std::string s = strip(text, std::nullopt, true, true);
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  auto has_prefix = [&](char p) { return i + 1 < s.size() && s[i] == '0' && (s[i + 1] | 0x20) == p; };
  bool prefixed = true;
  if ((base == 0 || base == 16) && has_prefix('x')) {
    base = 16;
  } else if ((base == 0 || base == 8) && has_prefix('o')) {
    base = 8;
  } else if ((base == 0 || base == 2) && has_prefix('b')) {
    base = 2;
  } else {
    prefixed = false;
  }
  if (prefixed) {
    i += 2;
  } else if (base == 0) {
    base = 10;  // and, as in Python, no leading zeros: int("010", 0) is an error
    if (i < s.size() && s[i] == '0' && s.find_first_not_of("0_", i) != std::string::npos) return std::nullopt;
  }
  // Digits with single underscores between them (one may also follow a prefix).
  uint64_t value = 0;
  bool need_digit = true, underscore_ok = prefixed;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '_') {
      if (!underscore_ok) return std::nullopt;
      underscore_ok = false;
      need_digit = true;
      continue;
    }
    const char l = static_cast<char>(c | 0x20);
    const int d = c >= '0' && c <= '9' ? c - '0' : (l >= 'a' && l <= 'z' ? l - 'a' + 10 : 99);
    if (d >= base) return std::nullopt;
    if (value > (static_cast<uint64_t>(INT64_MAX) - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base))
      raise("integer overflow");
    value = value * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
    need_digit = false;
    underscore_ok = true;
  }
  if (need_digit) return std::nullopt;
  return negative ? -static_cast<int64_t>(value) : static_cast<int64_t>(value);
}

}  // namespace fg::jinja::pystr
