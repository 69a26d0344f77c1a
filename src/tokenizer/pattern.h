// tokenizer/pattern.h — the patterns of tokenizer.json ({"String": ...} or {"Regex": ...}) as used
// by Split, Replace and the byte-level pre-tokenizer: find successive non-overlapping matches.
//
// Hugging Face compiles regexes with Oniguruma (Ruby syntax, Unicode 16.0); fullgraph uses PCRE2
// (UTF, UCP, JIT; Debian's 10.42 has Unicode 14.0). Patterns are rewritten so that both mean the
// same: \s and \S become Unicode White_Space classes (PCRE2's own \s also takes U+180E, and not
// consistently), \p{general category} is widened with the characters Unicode 15.0-16.0 added (see
// unicode_delta.h), \uHHHH and \v get PCRE2 spellings. Constructs whose meaning differs and that
// real tokenizers do not use (\h, \d, \w, \b, (?m), POSIX classes, script properties, class
// intersection, {,n}) are refused at load rather than translated approximately, and so are
// patterns that can match the empty string.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fg {

class JsonView;

struct ByteSpan {
  size_t begin;
  size_t end;
};

class Pattern {
 public:
  // {"String": s} or {"Regex": r}; errors name the JSON path of `node`.
  static Pattern from_json(const JsonView& node);
  // An Oniguruma-syntax regex; `where` (a JSON path) is named in errors.
  static Pattern regex(std::string_view pattern, const JsonView& where);
  static Pattern literal(std::string_view text);
  // A fixed PCRE2 pattern of fullgraph's own (no Oniguruma translation; must compile).
  static Pattern builtin(std::string_view pcre2_pattern);

  // Appends the matches in `subject` (valid UTF-8), left to right, non-overlapping.
  void find_all(std::string_view subject, std::vector<ByteSpan>& out) const;

  bool is_literal() const { return !code_; }
  const std::string& source() const { return source_; }

 private:
  struct Code;
  static Pattern compile(std::string_view original, const std::string& translated, const JsonView* where);

  std::shared_ptr<const Code> code_;  // null for a literal
  std::string source_;                // the literal text, or the regex as written
};

}  // namespace fg
