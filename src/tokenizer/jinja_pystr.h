// tokenizer/jinja_pystr.h — Python `str` semantics over UTF-8 byte strings.
//
// Chat templates are written against Python strings: lengths, indices and slices count code
// points, `strip()` and `split()` know Python's notion of whitespace, `repr()` picks its quote
// and escapes the way CPython does. These helpers reproduce that on std::string so that a
// rendered prompt is byte-identical to the one transformers produces. Invalid UTF-8 never
// fails: each bad byte decodes to U+DC80..U+DCFF (Python's surrogateescape) and encodes back to
// itself, so templates read from arbitrary bytes still round-trip.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fg::jinja::pystr {

std::u32string decode(std::string_view s);
void append_utf8(std::string& out, char32_t cp);
std::string encode(std::u32string_view s);
bool is_ascii(std::string_view s);
int64_t length(std::string_view s);  // in code points

// Character classes as CPython defines them (str.isspace, str.isprintable, ...).
bool is_space(char32_t c);
bool is_printable(char32_t c);
bool is_alpha(char32_t c);
bool is_alnum(char32_t c);
bool is_decimal(char32_t c);
bool is_digit(char32_t c);
bool is_cased(char32_t c);
bool is_lower_char(char32_t c);
bool is_upper_char(char32_t c);
bool is_line_break(char32_t c);

std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string title(std::string_view s);       // str.title()
std::string capitalize(std::string_view s);  // str.capitalize()
std::string swapcase(std::string_view s);
bool is_lower(std::string_view s);  // str.islower(): has a cased char and none uppercase
bool is_upper(std::string_view s);

// str.strip/lstrip/rstrip; `chars` absent means whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split / str.rsplit; `sep` absent means runs of whitespace. maxsplit < 0: no limit.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view s, bool keepends);
std::string replace(std::string_view s, std::string_view old, std::string_view with, int64_t count);

// Python's optional start/end arguments of find/count/startswith, already defaulted.
struct Span {
  std::optional<int64_t> start, end;
};
int64_t find(std::string_view s, std::string_view sub, Span span, bool reverse);
int64_t count(std::string_view s, std::string_view sub, Span span);
bool startswith(std::string_view s, std::string_view prefix, Span span);
bool endswith(std::string_view s, std::string_view suffix, Span span);

std::string repr(std::string_view s);  // repr(str), quotes included

// float(str) and int(str, base): surrounding whitespace, a sign, underscores between digits,
// inf/nan, base prefixes. nullopt where Python raises ValueError.
std::optional<double> to_float(std::string_view s);
std::optional<int64_t> to_int(std::string_view s, int64_t base);

}  // namespace fg::jinja::pystr
