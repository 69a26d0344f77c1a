// tokenizer/pattern.cpp — String/Regex patterns: the Oniguruma → PCRE2 syntax check and
// rewrite, compilation (with JIT where available) and the match loop.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pattern.h"

#include <pcre2.h>

#include "core/error.h"
#include "core/json/json_view.h"
#include "tokenizer/unicode_delta.h"

namespace fg {

struct Pattern::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

namespace {

// Unicode White_Space: what Oniguruma's \s matches in UTF-8 mode.
constexpr std::string_view kWhiteSpace =
    "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_ascii_alnum(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

void append_ranges(std::string& out, std::span<const CodeRange> ranges) {
  for (const CodeRange& r : ranges) {
    out += fmt::format("\\x{{{:X}}}", r.first);
    if (r.last != r.first) out += fmt::format("-\\x{{{:X}}}", r.last);
  }
}

// Translates \p{X} / \pX / \P{X} / \p{^X} (p[i] is the 'p' or 'P'), widening general categories to
// Unicode 16.0 (what Hugging Face's Oniguruma uses; PCRE2 10.42 has 14.0). Returns the index of the
// last character consumed.
size_t unicode_property(std::string_view p, size_t i, bool in_class, std::string& out, const JsonView& where) {
  bool negated = p[i] == 'P';
  std::string_view name;
  size_t last = i + 1;
  if (i + 1 < p.size() && p[i + 1] == '{') {
    const size_t close = p.find('}', i + 2);
    if (close == std::string_view::npos) where.fail("the regex has an unterminated \\p{{...}}");
    name = p.substr(i + 2, close - i - 2);
    last = close;
    if (!name.empty() && name[0] == '^') {
      negated = !negated;
      name.remove_prefix(1);
    }
  } else if (i + 1 < p.size()) {
    name = p.substr(i + 1, 1);
  } else {
    where.fail("the regex ends with \\p");
  }
  const auto added = unicode16_additions(name);
  if (!added)
    where.fail("the Unicode property \\p{{{}}} is not supported (only general categories such as L, Lu, N, "
               "Nd, P, S; not Mn, C, Cn or scripts)", name);
  const std::string base = fmt::format("\\p{{{}}}", name);
  if (added->empty()) {
    out += negated ? fmt::format("\\P{{{}}}", name) : base;
  } else if (!negated) {
    if (!in_class) out += '[';
    out += base;
    append_ranges(out, *added);
    if (!in_class) out += ']';
  } else {
    if (in_class) where.fail("a negated \\P{{{}}} inside a character class is not supported", name);
    out += "[^" + base;
    append_ranges(out, *added);
    out += ']';
  }
  return last;
}

// Rewrites the Oniguruma (Ruby syntax) pattern into PCRE2 syntax with the same meaning, or fails
// naming the construct. Only escapes and group openers whose meaning differs need attention.
std::string to_pcre2(std::string_view p, const JsonView& where) {
  std::string out;
  out.reserve(p.size() + 8);
  bool in_class = false;
  size_t class_start = 0;  // index just after "[" or "[^": a ']' there is a literal
  const auto refuse = [&](std::string_view what) {
    where.fail("the regex construct {} is not supported (its Oniguruma meaning differs from PCRE2's)", what);
  };
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\') {
      if (i + 1 >= p.size()) where.fail("the regex ends with a lone backslash");
      const char e = p[++i];
      switch (e) {
        case 's':  // Unicode White_Space, spelled out: PCRE2's own \s also takes U+180E, and not consistently
          if (in_class) out += kWhiteSpace;
          else out += "[" + std::string(kWhiteSpace) + "]";
          break;
        case 'S':
          if (in_class) refuse("\\S inside a character class");
          out += "[^" + std::string(kWhiteSpace) + "]";
          break;
        case 'p': case 'P':
          i = unicode_property(p, i, in_class, out, where);
          break;
        case 'x': case 'r': case 'n': case 't': case 'f': case 'e': case 'a':
          out.push_back('\\');
          out.push_back(e);
          break;
        case 'A': case 'z': case 'Z':
          if (in_class) refuse(fmt::format("\\{} inside a character class", e));
          out.push_back('\\');
          out.push_back(e);
          break;
        case 'v':  // Oniguruma: the vertical tab character; PCRE2: any vertical space
          out += "\\x{0B}";
          break;
        case 'u': {  // Oniguruma \uHHHH; PCRE2 spells it \x{HHHH}
          if (i + 4 >= p.size() || !(is_hex(p[i + 1]) && is_hex(p[i + 2]) && is_hex(p[i + 3]) && is_hex(p[i + 4])))
            refuse("\\u not followed by four hex digits");
          out += "\\x{";
          out.append(p.substr(i + 1, 4));
          out += "}";
          i += 4;
          break;
        }
        default:
          if (is_ascii_alnum(e)) refuse(fmt::format("\\{}", e));
          out.push_back('\\');  // an escaped punctuation or non-ASCII character: a literal in both
          out.push_back(e);
      }
      continue;
    }
    if (in_class) {
      if (c == ']' && i != class_start) {
        in_class = false;
      } else if (c == '[') {
        refuse(i + 1 < p.size() && p[i + 1] == ':' ? "[:posix:] class" : "nested character class");
      } else if (c == '&' && i + 1 < p.size() && p[i + 1] == '&') {
        refuse("&& (class intersection)");
      }
      out.push_back(c);
      continue;
    }
    if (c == '[') {
      in_class = true;
      out.push_back(c);
      if (i + 1 < p.size() && p[i + 1] == '^') out.push_back(p[++i]);
      class_start = i + 1;
      continue;
    }
    if (c == '{' && i + 1 < p.size() && p[i + 1] == ',') refuse("{,n} (PCRE2 reads it as literal text)");
    if (c == '(' && i + 1 < p.size() && p[i + 1] == '?') {
      const std::string_view rest = p.substr(i + 2);
      const bool plain = !rest.empty() && (rest[0] == ':' || rest[0] == '=' || rest[0] == '!' || rest[0] == '>');
      const bool behind = rest.size() >= 2 && rest[0] == '<' && (rest[1] == '=' || rest[1] == '!');
      if (!plain && !behind) {
        // Only case-insensitivity flags: (?i) (?-i) (?i:...) (?-i:...). Oniguruma's m is PCRE2's s.
        size_t k = 0;
        while (k < rest.size() && (rest[k] == 'i' || rest[k] == '-')) ++k;
        if (k == 0 || k >= rest.size() || (rest[k] != ')' && rest[k] != ':'))
          refuse(fmt::format("(?{}", rest.substr(0, std::min<size_t>(rest.size(), 4))));
      }
    }
    out.push_back(c);
  }
  if (in_class) where.fail("the regex has an unterminated character class");
  return out;
}

}  // namespace

Pattern Pattern::from_json(const JsonView& node) {
  node.require_object();
  node.allow_only({"String", "Regex"});
  if (node.raw().size() != 1) node.fail("expected exactly one of \"String\" or \"Regex\"");
  if (auto s = node.get("String")) {
    if (s->as_string().empty()) s->fail("an empty pattern is not supported");
    return literal(s->as_string());
  }
  const JsonView r = node["Regex"];
  return regex(r.as_string(), r);
}

Pattern Pattern::literal(std::string_view text) {
  Pattern p;
  p.source_ = std::string(text);
  return p;
}

Pattern Pattern::regex(std::string_view pattern, const JsonView& where) {
  return compile(pattern, to_pcre2(pattern, where), &where);
}

Pattern Pattern::builtin(std::string_view pcre2_pattern) {
  return compile(pcre2_pattern, std::string(pcre2_pattern), nullptr);
}

Pattern Pattern::compile(std::string_view original, const std::string& translated, const JsonView* where) {
  pcre2_compile_context* context = pcre2_compile_context_create(nullptr);
  FG_CHECK(context, "out of memory creating a PCRE2 compile context");
  pcre2_set_newline(context, PCRE2_NEWLINE_LF);  // Ruby: '.' excludes only \n, and ^ $ are line anchors
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &error, &offset, context);
  pcre2_compile_context_free(context);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    const std::string text = fmt::format("the regex does not compile: {} (at offset {})",
                                         reinterpret_cast<const char*>(message), offset);
    if (where) where->fail_message(text);
    fail("internal regex /{}/: {}", original, text);
  }
  auto holder = std::make_shared<Code>();
  holder->code = code;
  uint32_t min_length = 0;
  pcre2_pattern_info(code, PCRE2_INFO_MINLENGTH, &min_length);
  if (min_length == 0) {
    const std::string text = "the regex can match the empty string, which fullgraph does not support";
    if (where) where->fail_message(text);
    fail("internal regex /{}/: {}", original, text);
  }
  holder->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  Pattern p;
  p.code_ = std::move(holder);
  p.source_ = std::string(original);
  return p;
}

void Pattern::find_all(std::string_view subject, std::vector<ByteSpan>& out) const {
  if (!code_) {
    for (size_t pos = subject.find(source_); pos != std::string_view::npos; pos = subject.find(source_, pos)) {
      out.push_back({pos, pos + source_.size()});
      pos += source_.size();
    }
    return;
  }
  struct MatchData {
    pcre2_match_data* md;
    ~MatchData() { pcre2_match_data_free(md); }
  } data{pcre2_match_data_create_from_pattern(code_->code, nullptr)};
  FG_CHECK(data.md, "out of memory creating PCRE2 match data");
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.md);
  size_t start = 0;
  while (start < subject.size()) {
    // The subject was validated as UTF-8 once; re-checking it on every call would be quadratic.
    int rc = code_->jit ? pcre2_jit_match(code_->code, s, subject.size(), start, 0, data.md, nullptr)
                        : pcre2_match(code_->code, s, subject.size(), start, PCRE2_NO_UTF_CHECK, data.md, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)  // the interpreter keeps its backtracking state on the heap
      rc = pcre2_match(code_->code, s, subject.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, data.md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) return;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof message);
      fail("regex /{}/ failed at byte {} of a {}-byte input: {}", source_, start, subject.size(),
           reinterpret_cast<const char*>(message));
    }
    const size_t begin = ovector[0], end = ovector[1];
    FG_ASSERT(begin >= start && end > begin && end <= subject.size());
    out.push_back({begin, end});
    start = end;
  }
}

}  // namespace fg
