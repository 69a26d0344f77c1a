// tokenizer/jinja_lexer.cpp — the tokenizer of the chat-template engine (see jinja_lexer.h).
//
// It follows jinja2's regular-expression lexer rule by rule, written as hand scanning: in the
// root state text runs to the earliest "{{", "{%" or "{#"; inside a tag the end delimiter is
// tried first (only when brackets are balanced, so that `{'a': {'b': 1}}` closes its braces
// before the tag), then whitespace, float, integer, name, string and operator, in that order.
#include "tokenizer/jinja_lexer.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>

#include "tokenizer/jinja_error.h"
#include "tokenizer/jinja_pystr.h"

namespace fg::jinja {

namespace {

enum class Tag { kComment, kBlock, kVariable };

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The operators of jinja2's lexer, longest first so that "//" wins over "/".
constexpr std::string_view kOperators[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[",
                                           "]",  "(",  ")",  "{",  "}",  ">",  "<", "=", ".", ":", "|", ",", ";"};

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(normalize(source)) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) lex_root();
    Token eof;
    eof.kind = TokenKind::kEof;
    eof.line = line_;
    tokens_.push_back(std::move(eof));
    return std::move(tokens_);
  }

 private:
  // jinja2 splits on \r\n, \r and \n, rejoins with \n and drops one trailing newline.
  static std::string normalize(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        out.push_back('\n');
        if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      } else {
        out.push_back(source[i]);
      }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }

  [[noreturn]] void fail(const std::string& message) const { throw TemplateError(message, line_); }

  bool at(size_t p, std::string_view s) const { return src_.compare(p, s.size(), s) == 0; }

  // Moves to `to`, counting the newlines passed, and records whether the consumed text ended a
  // line (jinja2's `line_starting`, which decides whether lstrip_blocks applies to the next tag).
  void advance(size_t to) {
    line_ += static_cast<int>(
        std::count(src_.begin() + static_cast<ptrdiff_t>(pos_), src_.begin() + static_cast<ptrdiff_t>(to), '\n'));
    if (to > pos_) line_starting_ = src_[to - 1] == '\n';
    pos_ = to;
  }

  // Python `\s` at p: the byte length of one whitespace code point there, or 0.
  size_t space_at(size_t p) const {
    const auto c = static_cast<unsigned char>(src_[p]);
    if (c < 0x80) return pystr::is_space(c) ? 1 : 0;
    const size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (p + n > src_.size()) return 0;
    const std::u32string cp = pystr::decode(std::string_view(src_).substr(p, n));
    return cp.size() == 1 && pystr::is_space(cp[0]) ? n : 0;
  }

  size_t skip_spaces(size_t p) const {
    while (p < src_.size()) {
      const size_t n = space_at(p);
      if (n == 0) break;
      p += n;
    }
    return p;
  }

  void emit(TokenKind kind, int line, std::string text = {}) {
    Token t;
    t.kind = kind;
    t.line = line;
    t.text = std::move(text);
    tokens_.push_back(std::move(t));
  }

  // The text before a tag, after the tag's whitespace control: `-` strips all whitespace,
  // lstrip_blocks strips the whitespace between the last "\n" and a block or comment tag
  // (jinja2 3.1 tests that stretch with `\s+`, so any Unicode space counts, even U+2028).
  void emit_text_before(size_t end, char sign, bool lstrip_allowed) {
    std::string text = src_.substr(pos_, end - pos_);
    if (sign == '-') {
      text = pystr::strip(text, std::nullopt, false, true);
    } else if (sign != '+' && lstrip_allowed) {
      const size_t nl = text.rfind('\n');
      const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
      if ((l_pos > 0 || line_starting_) && l_pos < text.size()) {
        const std::u32string tail = pystr::decode(std::string_view(text).substr(l_pos));
        if (std::all_of(tail.begin(), tail.end(), pystr::is_space)) text.resize(l_pos);
      }
    }
    const int line = line_;
    advance(end);
    if (!text.empty()) emit(TokenKind::kData, line, std::move(text));
  }

  // `{%[-+]?\s*raw\s*(-%}\s*|%})` at p; returns the end of the match.
  std::optional<size_t> match_raw_begin(size_t p) const {
    p += 2;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    p = skip_spaces(p);
    if (!at(p, "raw")) return std::nullopt;
    p = skip_spaces(p + 3);
    if (at(p, "-%}")) return skip_spaces(p + 3);
    if (at(p, "%}")) return p + 2;
    return std::nullopt;
  }

  void lex_root() {
    size_t t = pos_;
    while (true) {
      t = src_.find('{', t);
      if (t == std::string::npos || t + 1 >= src_.size()) {
        const int line = line_;
        std::string rest = src_.substr(pos_);
        advance(src_.size());
        emit(TokenKind::kData, line, std::move(rest));
        return;
      }
      const char c = src_[t + 1];
      if (c == '{' || c == '%' || c == '#') break;
      ++t;
    }
    const char c = src_[t + 1];
    const char sign = (t + 2 < src_.size() && (src_[t + 2] == '-' || src_[t + 2] == '+')) ? src_[t + 2] : '\0';
    if (c == '%') {
      if (auto raw_end = match_raw_begin(t)) {
        emit_text_before(t, sign, true);
        advance(*raw_end);
        lex_raw();
        return;
      }
    }
    const Tag tag = c == '#' ? Tag::kComment : c == '%' ? Tag::kBlock : Tag::kVariable;
    emit_text_before(t, sign, tag != Tag::kVariable);
    advance(t + 2 + (sign ? 1 : 0));
    line_starting_ = false;
    if (tag == Tag::kComment) {
      lex_comment();
    } else {
      lex_tag(tag);
    }
  }

  void lex_comment() {
    const int start_line = line_;
    const size_t close = src_.find("#}", pos_);
    if (close == std::string::npos) throw TemplateError("missing end of comment tag", start_line);
    const char sign = (close > pos_ && (src_[close - 1] == '-' || src_[close - 1] == '+')) ? src_[close - 1] : '\0';
    size_t end = close + 2;
    if (sign == '-') {
      end = skip_spaces(end);
    } else if (sign != '+' && end < src_.size() && src_[end] == '\n') {
      ++end;  // trim_blocks
    }
    advance(end);
  }

  // `{%[-+]?\s*endraw\s*(\+%}|-%}\s*|%}\n?)` starting at p, or nullopt.
  std::optional<std::pair<size_t, char>> match_raw_end(size_t p) const {
    size_t q = p + 2;
    char sign = '\0';
    if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) sign = src_[q++];
    q = skip_spaces(q);
    if (!at(q, "endraw")) return std::nullopt;
    q = skip_spaces(q + 6);
    if (at(q, "+%}")) return std::make_pair(q + 3, sign);
    if (at(q, "-%}")) return std::make_pair(skip_spaces(q + 3), sign);
    if (at(q, "%}")) {
      q += 2;
      if (q < src_.size() && src_[q] == '\n') ++q;
      return std::make_pair(q, sign);
    }
    return std::nullopt;
  }

  void lex_raw() {
    const int start_line = line_;
    for (size_t p = src_.find("{%", pos_); p != std::string::npos; p = src_.find("{%", p + 1)) {
      if (auto end = match_raw_end(p)) {
        emit_text_before(p, end->second, true);
        advance(end->first);
        return;
      }
    }
    throw TemplateError("missing end of raw directive", start_line);
  }

  void lex_tag(Tag tag) {
    emit(tag == Tag::kBlock ? TokenKind::kBlockBegin : TokenKind::kVariableBegin, line_);
    std::vector<char> balance;
    while (pos_ < src_.size()) {
      if (balance.empty() && lex_tag_end(tag)) return;
      if (const size_t n = space_at(pos_)) {
        advance(skip_spaces(pos_ + n));
        continue;
      }
      if (lex_number() || lex_name() || lex_string()) continue;
      lex_operator(balance);
    }
    // End of input inside a tag: the parser reports what it was still waiting for.
  }

  bool lex_tag_end(Tag tag) {
    const int line = line_;
    size_t end = 0;
    if (tag == Tag::kBlock) {
      if (at(pos_, "+%}")) {
        end = pos_ + 3;
      } else if (at(pos_, "-%}")) {
        end = skip_spaces(pos_ + 3);
      } else if (at(pos_, "%}")) {
        end = pos_ + 2;
        if (end < src_.size() && src_[end] == '\n') ++end;  // trim_blocks
      }
    } else {
      if (at(pos_, "-}}")) {
        end = skip_spaces(pos_ + 3);
      } else if (at(pos_, "}}")) {
        end = pos_ + 2;
      }
    }
    if (end == 0) return false;
    const bool newline_end = src_[end - 1] == '\n';
    advance(end);
    line_starting_ = newline_end;
    emit(tag == Tag::kBlock ? TokenKind::kBlockEnd : TokenKind::kVariableEnd, line);
    return true;
  }

  // `(\d+_)*\d+` at p: digits with single underscores between them; returns the end or p.
  size_t digit_groups(size_t p, int (*digit)(char)) const {
    size_t q = p;
    if (q >= src_.size() || digit(src_[q]) < 0) return p;
    while (q < src_.size() && digit(src_[q]) >= 0) ++q;
    while (q + 1 < src_.size() && src_[q] == '_' && digit(src_[q + 1]) >= 0) {
      q += 1;
      while (q < src_.size() && digit(src_[q]) >= 0) ++q;
    }
    return q;
  }

  static int dec(char c) { return is_digit(c) ? c - '0' : -1; }
  static int bin(char c) { return c == '0' || c == '1' ? c - '0' : -1; }
  static int oct(char c) { return c >= '0' && c <= '7' ? c - '0' : -1; }
  static int hex(char c) { return hex_value(c); }

  bool lex_number() {
    if (!is_digit(src_[pos_])) return false;
    const int line = line_;
    // Floats are tried first, and not right after a dot, so that `x.0.1` is two subscripts.
    if (pos_ == 0 || src_[pos_ - 1] != '.') {
      const size_t mantissa = digit_groups(pos_, dec);
      size_t end = 0;
      auto exponent_at = [&](size_t p) -> size_t {
        if (p >= src_.size() || (src_[p] != 'e' && src_[p] != 'E')) return 0;
        ++p;
        if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
        const size_t q = digit_groups(p, dec);
        return q == p ? 0 : q;
      };
      size_t fraction = 0;
      if (mantissa < src_.size() && src_[mantissa] == '.') {
        const size_t q = digit_groups(mantissa + 1, dec);
        if (q != mantissa + 1) fraction = q;
      }
      if (fraction) end = exponent_at(fraction);
      if (!end) end = exponent_at(mantissa);
      if (!end) end = fraction;
      if (end) {
        std::string text;
        for (size_t i = pos_; i < end; ++i)
          if (src_[i] != '_') text.push_back(src_[i]);
        Token t;
        t.kind = TokenKind::kFloat;
        t.line = line;
        std::from_chars(text.data(), text.data() + text.size(), t.float_value);
        tokens_.push_back(std::move(t));
        advance(end);
        return true;
      }
    }
    int base = 10;
    size_t digits_begin = pos_, end = 0;
    const char p1 = pos_ + 1 < src_.size() ? static_cast<char>(src_[pos_ + 1] | 0x20) : '\0';
    auto prefixed = [&](int (*digit)(char)) -> size_t {
      // `0x(_?[\da-f])+`: an underscore may follow the prefix.
      size_t p = pos_ + 2;
      if (p < src_.size() && src_[p] == '_') ++p;
      const size_t q = digit_groups(p, digit);
      return q == p ? 0 : q;
    };
    if (src_[pos_] == '0' && p1 == 'b' && (end = prefixed(bin))) {
      base = 2, digits_begin = pos_ + 2;
    } else if (src_[pos_] == '0' && p1 == 'o' && (end = prefixed(oct))) {
      base = 8, digits_begin = pos_ + 2;
    } else if (src_[pos_] == '0' && p1 == 'x' && (end = prefixed(hex))) {
      base = 16, digits_begin = pos_ + 2;
    } else if (src_[pos_] != '0') {
      end = digit_groups(pos_, dec);
    } else {
      end = pos_ + 1;  // `0(_?0)*`
      while (end < src_.size() &&
             (src_[end] == '0' || (src_[end] == '_' && end + 1 < src_.size() && src_[end + 1] == '0')))
        end += src_[end] == '_' ? 2 : 1;
    }
    uint64_t value = 0;
    for (size_t i = digits_begin; i < end; ++i) {
      if (src_[i] == '_') continue;
      const int d = hex_value(src_[i]);
      if (value > (static_cast<uint64_t>(INT64_MAX) - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base))
        fail("integer literal too large");
      value = value * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
    }
    Token t;
    t.kind = TokenKind::kInteger;
    t.line = line;
    t.int_value = static_cast<int64_t>(value);
    tokens_.push_back(std::move(t));
    advance(end);
    return true;
  }

  bool lex_name() {
    if (!is_name_start(src_[pos_])) return false;
    size_t end = pos_ + 1;
    while (end < src_.size() && is_name_char(src_[end])) ++end;
    emit(TokenKind::kName, line_, src_.substr(pos_, end - pos_));
    advance(end);
    return true;
  }

  bool lex_string() {
    const char quote = src_[pos_];
    if (quote != '\'' && quote != '"') return false;
    size_t end = pos_ + 1;
    while (end < src_.size() && src_[end] != quote) end += src_[end] == '\\' ? 2 : 1;
    if (end >= src_.size()) return false;  // unterminated: reported as an unexpected char
    const int line = line_;
    std::string value = unescape(std::string_view(src_).substr(pos_ + 1, end - pos_ - 1));
    emit(TokenKind::kString, line, std::move(value));
    advance(end + 1);
    return true;
  }

  // Python's "unicode-escape" codec, which jinja2 applies to string literals after turning
  // non-ASCII characters into backslash escapes (so "\é" reads as the four characters "\xe9").
  std::string unescape(std::string_view body) const {
    const std::u32string in = pystr::decode(body);
    std::string out;
    out.reserve(body.size());
    auto hex_digits = [&](size_t& i, int count) -> char32_t {
      char32_t cp = 0;
      for (int k = 0; k < count; ++k, ++i) {
        const int d = i < in.size() && in[i] < 0x80 ? hex_value(static_cast<char>(in[i])) : -1;
        if (d < 0) fail("invalid escape sequence in string literal");
        cp = cp * 16 + static_cast<char32_t>(d);
      }
      return cp;
    };
    for (size_t i = 0; i < in.size();) {
      const char32_t c = in[i++];
      if (c != U'\\' || i >= in.size()) {
        pystr::append_utf8(out, c);
        continue;
      }
      const char32_t e = in[i++];
      switch (e) {
        case U'\n':
          break;
        case U'\\':
        case U'\'':
        case U'"':
          pystr::append_utf8(out, e);
          break;
        case U'a':
          out.push_back('\a');
          break;
        case U'b':
          out.push_back('\b');
          break;
        case U'f':
          out.push_back('\f');
          break;
        case U'n':
          out.push_back('\n');
          break;
        case U'r':
          out.push_back('\r');
          break;
        case U't':
          out.push_back('\t');
          break;
        case U'v':
          out.push_back('\v');
          break;
        case U'x':
          pystr::append_utf8(out, hex_digits(i, 2));
          break;
        case U'u':
          pystr::append_utf8(out, hex_digits(i, 4));
          break;
        case U'U': {
          const char32_t cp = hex_digits(i, 8);
          if (cp > 0x10FFFF) fail("invalid \\U escape in string literal");
          pystr::append_utf8(out, cp);
          break;
        }
        case U'N':
          fail("\\N{...} escapes are not supported in string literals");
        default:
          if (e >= U'0' && e <= U'7') {
            char32_t cp = e - U'0';
            for (int k = 0; k < 2 && i < in.size() && in[i] >= U'0' && in[i] <= U'7'; ++k)
              cp = cp * 8 + (in[i++] - U'0');
            pystr::append_utf8(out, cp);
          } else if (e >= 0x80) {
            // The backslash escaped the first character of the ASCII escape jinja2 made.
            out.push_back('\\');
            out.append(e <= 0xFF     ? fmt::format("x{:02x}", static_cast<unsigned>(e))
                       : e <= 0xFFFF ? fmt::format("u{:04x}", static_cast<unsigned>(e))
                                     : fmt::format("U{:08x}", static_cast<unsigned>(e)));
          } else {
            out.push_back('\\');
            pystr::append_utf8(out, e);
          }
      }
    }
    return out;
  }

  void lex_operator(std::vector<char>& balance) {
    for (std::string_view op : kOperators) {
      if (!at(pos_, op)) continue;
      const char c = op[0];
      if (op.size() == 1 && (c == '(' || c == '[' || c == '{')) {
        balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
      } else if (op.size() == 1 && (c == ')' || c == ']' || c == '}')) {
        if (balance.empty()) fail(fmt::format("unexpected '{}'", c));
        if (balance.back() != c) fail(fmt::format("unexpected '{}', expected '{}'", c, balance.back()));
        balance.pop_back();
      }
      emit(TokenKind::kOperator, line_, std::string(op));
      advance(pos_ + op.size());
      return;
    }
    const auto c = static_cast<unsigned char>(src_[pos_]);
    if (c >= 0x20 && c < 0x7F) fail(fmt::format("unexpected char '{}'", static_cast<char>(c)));
    fail(fmt::format("unexpected char with code 0x{:02x}", static_cast<unsigned>(c)));
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace fg::jinja
