// tokenizer/jinja_expr_parser.h — the expression half of the parser: a token cursor and jinja2's
// expression grammar, which the statement parser (jinja_parser.cpp) builds on.
//
// Precedence, loosest first, as jinja2's Parser has it: conditional expression, or, and, not,
// comparisons (chained, with in / not in), + -, ~, * / // %, **, unary - +, then primaries with
// their postfix (.attr, [key], call) and filter/test suffixes. Its quirks are kept on purpose:
// `**` is left-associative, `-x|f` filters the negation, and `is` tests bind tighter than `not`.
// Recursion is bounded: every path that recurses passes a Nest guard, and every node records
// its depth so that the tree stays shallow enough to evaluate and destroy without recursion
// trouble.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/jinja_ast.h"
#include "tokenizer/jinja_error.h"
#include "tokenizer/jinja_lexer.h"

namespace fg::jinja {

std::string describe(const Token& t);  // for messages: "'endfor'", "end of print statement"

class ExpressionParser {
 public:
  ExpressionParser(std::vector<Token> tokens, int max_nesting)
      : tokens_(std::move(tokens)), max_nesting_(max_nesting), max_depth_(4 * max_nesting) {}

 protected:
  // Counts active recursion and refuses to go deeper than max_nesting.
  class Nest {
   public:
    explicit Nest(ExpressionParser& p);
    ~Nest() { --p_.nesting_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    ExpressionParser& p_;
  };

  // ---- the token cursor ----
  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
  const Token& next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  [[noreturn]] void fail(const std::string& message, int line = 0) const {
    throw TemplateError(message, line ? line : cur().line);
  }
  bool is_op(std::string_view op) const { return cur().kind == TokenKind::kOperator && cur().text == op; }
  bool is_name(std::string_view name) const { return cur().kind == TokenKind::kName && cur().text == name; }
  bool skip_op(std::string_view op);
  bool skip_name(std::string_view name);
  void expect_op(std::string_view op);
  void expect(TokenKind kind, std::string_view what);
  std::string expect_name();

  // ---- building nodes ----
  ExprPtr make(ExprKind kind, int line);
  ExprPtr finish(ExprPtr e);  // records the depth, refusing trees deeper than 4 * max_nesting
  ExprPtr binary(ExprKind kind, ExprPtr left, ExprPtr right, int line);

  // ---- the grammar ----
  bool is_tuple_end(const std::vector<std::string_view>& extra_end) const;
  // A comma-separated list that becomes a tuple when it has a comma; `simplified` allows only
  // primaries (assignment targets).
  ExprPtr parse_tuple(bool simplified, bool with_condexpr, const std::vector<std::string_view>& extra_end,
                      bool explicit_parentheses);
  ExprPtr parse_expression(bool with_condexpr);
  ExprPtr parse_condexpr();
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_list();
  ExprPtr parse_dict();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_subscribed();
  void parse_call_args(Expr& e);
  ExprPtr parse_call(ExprPtr node);
  std::string parse_dotted_name();
  // `| name(args) | name ...`; with `start_inline` the first filter has no leading pipe.
  ExprPtr parse_filter_chain(ExprPtr node, bool start_inline = false);
  ExprPtr parse_test(ExprPtr node);

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int nesting_ = 0;
  int max_nesting_;
  int max_depth_;
};

}  // namespace fg::jinja
