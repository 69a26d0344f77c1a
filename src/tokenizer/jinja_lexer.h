// tokenizer/jinja_lexer.h — template source to tokens, with Jinja's whitespace rules.
//
// Whitespace handling is where a prompt most easily differs by one byte from transformers, so
// the lexer mirrors jinja2's Lexer as transformers configures it: trim_blocks (the newline after
// a block or comment tag is dropped), lstrip_blocks (spaces and tabs before a block or comment
// tag on its own line are dropped), `-` and `+` modifiers on tags, newlines normalised to "\n"
// and one trailing newline of the source removed (keep_trailing_newline=False).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fg::jinja {

enum class TokenKind : uint8_t {
  kData,           // literal template text
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,
  kString,   // text holds the decoded value
  kInteger,  // int_value
  kFloat,    // float_value
  kOperator,
  kEof,
};

struct Token {
  TokenKind kind = TokenKind::kEof;
  int line = 0;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0.0;
};

// Raises TemplateError (with the line) on a lexical error; the last token is always kEof.
std::vector<Token> tokenize(std::string_view source);

}  // namespace fg::jinja
