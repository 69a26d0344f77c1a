// tokenizer/jinja_parser.cpp — the statement half of the parser: template text, {{ }}, and the
// {% %} tags chat templates use (if/elif/else, for/else with a filter, set incl. block set and
// namespace attributes, macro, break/continue, filter, with, print, and transformers'
// {% generation %}), on top of ExpressionParser.
//
// Like jinja2, an unknown filter or test is a syntax error unless it sits inside an `if` or a
// conditional expression, where it only fails when evaluated (checked after parsing).
#include "tokenizer/jinja_parser.h"

#include <fmt/format.h>

#include <algorithm>

#include "tokenizer/jinja_error.h"
#include "tokenizer/jinja_expr_parser.h"
#include "tokenizer/jinja_filters.h"
#include "tokenizer/jinja_is_tests.h"
#include "tokenizer/jinja_lexer.h"

namespace fg::jinja {

namespace {

class TemplateParser : public ExpressionParser {
 public:
  TemplateParser(std::vector<Token> tokens, const ParseLimits& limits)
      : ExpressionParser(std::move(tokens), limits.max_nesting) {}

  Body parse() {
    Body body = subparse({});
    if (cur().kind != TokenKind::kEof) fail(fmt::format("unexpected {}", describe(cur())));
    check_body(body, false);
    return body;
  }

 private:
  // Saves and restores a parser flag around a nested construct.
  template <typename T>
  class Scoped {
   public:
    Scoped(T& slot, T value) : slot_(slot), saved_(slot) { slot_ = value; }
    ~Scoped() { slot_ = saved_; }
    Scoped(const Scoped&) = delete;
    Scoped& operator=(const Scoped&) = delete;

   private:
    T& slot_;
    T saved_;
  };

  bool at_end_tag(const std::vector<std::string_view>& end_tags) const {
    return cur().kind == TokenKind::kName && std::find(end_tags.begin(), end_tags.end(), cur().text) != end_tags.end();
  }

  Body subparse(const std::vector<std::string_view>& end_tags) {
    Body body;
    while (cur().kind != TokenKind::kEof) {
      const Token& t = cur();
      if (t.kind == TokenKind::kData) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kData;
        s->line = t.line;
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.kind == TokenKind::kVariableBegin) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kPrint;
        s->line = next().line;
        s->expr = parse_tuple(false, true, {}, false);
        expect(TokenKind::kVariableEnd, "end of print statement");
        body.push_back(std::move(s));
      } else if (t.kind == TokenKind::kBlockBegin) {
        next();
        if (!end_tags.empty() && at_end_tag(end_tags)) return body;
        body.push_back(parse_statement());
        expect(TokenKind::kBlockEnd, "end of statement block");
      } else {
        fail(fmt::format("unexpected {}", describe(t)));
      }
    }
    return body;
  }

  Body parse_statements(const std::vector<std::string_view>& end_tags, bool drop_needle) {
    skip_op(":");
    expect(TokenKind::kBlockEnd, "end of statement block");
    Body body = subparse(end_tags);
    if (cur().kind == TokenKind::kEof) {
      std::string wanted;
      for (std::string_view tag : end_tags) wanted += fmt::format("{}'{}'", wanted.empty() ? "" : " or ", tag);
      fail(fmt::format("unexpected end of template, expected {} (the innermost open block is '{}')", wanted,
                       open_tags_.empty() ? "" : open_tags_.back()));
    }
    if (drop_needle) next();
    return body;
  }

  StmtPtr parse_statement() {
    Nest nest(*this);
    if (cur().kind != TokenKind::kName) fail("tag name expected");
    const std::string tag = cur().text;
    const int line = cur().line;
    open_tags_.push_back(tag);
    StmtPtr s;
    if (tag == "if") {
      s = parse_if();
    } else if (tag == "for") {
      s = parse_for();
    } else if (tag == "set") {
      s = parse_set();
    } else if (tag == "macro") {
      s = parse_macro();
    } else if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail(fmt::format("'{}' outside of a loop", tag));
      next();
      s = std::make_unique<Stmt>();
      s->kind = tag == "break" ? StmtKind::kBreak : StmtKind::kContinue;
    } else if (tag == "filter") {
      s = parse_filter_block();
    } else if (tag == "with") {
      s = parse_with();
    } else if (tag == "print") {
      next();
      s = std::make_unique<Stmt>();
      s->kind = StmtKind::kPrint;
      s->expr = parse_print_args();
    } else if (tag == "generation") {
      next();
      s = std::make_unique<Stmt>();
      s->kind = StmtKind::kScope;
      Scoped<int> loops(loop_depth_, 0);  // jinja2 renders the body as a function
      s->body = parse_statements({"endgeneration"}, true);
    } else {
      static const std::vector<std::string_view> unsupported = {"block", "extends",    "include", "import", "from",
                                                                "call",  "autoescape", "raw",     "do"};
      if (std::find(unsupported.begin(), unsupported.end(), tag) != unsupported.end())
        fail(fmt::format("the '{}' tag is not supported in chat templates", tag));
      fail(fmt::format("unknown tag '{}'", tag));
    }
    s->line = line;
    open_tags_.pop_back();
    return s;
  }

  ExprPtr parse_print_args() {
    // `{% print a, b %}` prints the tuple, like `{{ a, b }}`.
    return parse_tuple(false, true, {}, false);
  }

  StmtPtr parse_if() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kIf;
    next();  // if
    while (true) {
      ExprPtr test = parse_tuple(false, false, {}, false);
      Body body = parse_statements({"elif", "else", "endif"}, false);
      s->branches.emplace_back(std::move(test), std::move(body));
      const std::string which = next().text;
      if (which == "elif") continue;
      if (which == "else") s->else_body = parse_statements({"endif"}, true);
      break;
    }
    return s;
  }

  StmtPtr parse_for() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kFor;
    next();  // for
    s->target = parse_assign_target(true, false, {"in"}, false);
    if (!skip_name("in")) fail(fmt::format("expected 'in', got {}", describe(cur())));
    s->expr = parse_tuple(false, false, {"recursive"}, false);
    if (skip_name("if")) s->condition = parse_expression(true);
    if (is_name("recursive")) fail("recursive loops are not supported in chat templates");
    {
      Scoped<int> loops(loop_depth_, loop_depth_ + 1);
      s->body = parse_statements({"endfor", "else"}, false);
    }
    if (next().text == "else") s->else_body = parse_statements({"endfor"}, true);
    return s;
  }

  StmtPtr parse_set() {
    auto s = std::make_unique<Stmt>();
    next();  // set
    s->target = parse_assign_target(true, false, {}, true);
    if (skip_op("=")) {
      s->kind = StmtKind::kSet;
      s->expr = parse_tuple(false, true, {}, false);
      return s;
    }
    s->kind = StmtKind::kSetBlock;
    s->expr = parse_filter_chain(nullptr);
    s->body = parse_statements({"endset"}, true);
    return s;
  }

  StmtPtr parse_macro() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kMacro;
    const int line = next().line;  // macro
    auto def = std::make_unique<MacroDef>();
    def->line = line;
    def->name = expect_name();
    expect_op("(");
    while (!is_op(")")) {
      if (!def->params.empty()) expect_op(",");
      if (is_op(")")) break;  // trailing comma
      const std::string param = expect_name();
      if (std::find(def->params.begin(), def->params.end(), param) != def->params.end())
        fail(fmt::format("duplicate argument '{}' in macro '{}'", param, def->name));
      ExprPtr fallback;
      if (skip_op("=")) {
        fallback = parse_expression(true);
      } else if (!def->defaults.empty() && def->defaults.back()) {
        fail("non-default argument follows default argument");
      }
      def->params.push_back(param);
      def->defaults.push_back(std::move(fallback));
    }
    next();  // )
    {
      Scoped<int> loops(loop_depth_, 0);
      def->body = parse_statements({"endmacro"}, true);
    }
    s->macro = std::move(def);
    return s;
  }

  StmtPtr parse_filter_block() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kFilterBlock;
    next();  // filter
    s->expr = parse_filter_chain(nullptr, true);
    s->body = parse_statements({"endfilter"}, true);
    return s;
  }

  StmtPtr parse_with() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kWith;
    next();  // with
    while (cur().kind != TokenKind::kBlockEnd) {
      if (!s->assignments.empty()) expect_op(",");
      Target target = parse_assign_target(true, false, {}, false);
      expect_op("=");
      s->assignments.emplace_back(std::move(target), parse_expression(true));
    }
    s->body = parse_statements({"endwith"}, true);
    return s;
  }

  Target to_target(const Expr& e) const {
    Target t;
    if (e.kind == ExprKind::kName) {
      t.kind = Target::Kind::kName;
      t.name = e.name;
      return t;
    }
    if (e.kind == ExprKind::kTuple) {
      t.kind = Target::Kind::kTuple;
      for (const ExprPtr& item : e.items) t.items.push_back(to_target(*item));
      return t;
    }
    fail(fmt::format("can't assign to this expression"), e.line);
  }

  Target parse_assign_target(bool with_tuple, bool name_only, const std::vector<std::string_view>& extra_end,
                             bool with_namespace) {
    if (with_namespace && peek().kind == TokenKind::kOperator && peek().text == ".") {
      Target t;
      t.kind = Target::Kind::kNamespaceAttr;
      t.name = expect_name();
      next();  // .
      t.attr = expect_name();
      return t;
    }
    if (name_only) {
      Target t;
      t.name = expect_name();
      return t;
    }
    ExprPtr e = with_tuple ? parse_tuple(true, true, extra_end, false) : parse_primary();
    return to_target(*e);
  }

  // ---- unknown filters and tests ----
  // jinja2 resolves filters and tests when it compiles, except in "soft" frames (the test and
  // branches of an if, a conditional expression), where a missing one fails only if reached.
  // Loop bodies, macros, set blocks and with blocks open a fresh, hard frame.

  void check_expr(const Expr* e, bool soft) const {
    if (!e) return;
    if (e->kind == ExprKind::kCondExpr) soft = true;
    if (!soft && e->kind == ExprKind::kFilter && !find_filter(e->name))
      fail(fmt::format("no filter named '{}'", e->name), e->line);
    if (!soft && e->kind == ExprKind::kTest && !find_test(e->name))
      fail(fmt::format("no test named '{}'", e->name), e->line);
    check_expr(e->target.get(), soft);
    for (const ExprPtr& item : e->items) check_expr(item.get(), soft);
    for (const auto& kw : e->kwargs) check_expr(kw.second.get(), soft);
    check_expr(e->dyn_args.get(), soft);
    check_expr(e->dyn_kwargs.get(), soft);
  }

  void check_body(const Body& body, bool soft) const {
    for (const StmtPtr& s : body) {
      switch (s->kind) {
        case StmtKind::kIf:
          for (const auto& [test, branch] : s->branches) {
            check_expr(test.get(), true);
            check_body(branch, true);
          }
          check_body(s->else_body, true);
          break;
        case StmtKind::kFor:
          check_expr(s->expr.get(), soft);
          check_expr(s->condition.get(), false);
          check_body(s->body, false);
          check_body(s->else_body, false);
          break;
        case StmtKind::kMacro:
          for (const ExprPtr& d : s->macro->defaults) check_expr(d.get(), false);
          check_body(s->macro->body, false);
          break;
        case StmtKind::kWith:
          for (const auto& assignment : s->assignments) check_expr(assignment.second.get(), soft);
          check_body(s->body, false);
          break;
        case StmtKind::kSetBlock:
        case StmtKind::kFilterBlock:
        case StmtKind::kScope:
          check_expr(s->expr.get(), false);
          check_body(s->body, false);
          break;
        default:
          check_expr(s->expr.get(), soft);
      }
    }
  }

  int loop_depth_ = 0;  // enclosing for loops in the current function (break/continue)
  std::vector<std::string> open_tags_;
};

}  // namespace

Body parse_template(std::string_view source, const ParseLimits& limits) {
  return TemplateParser(tokenize(source), limits).parse();
}

}  // namespace fg::jinja
