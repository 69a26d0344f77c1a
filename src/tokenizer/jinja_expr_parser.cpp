// tokenizer/jinja_expr_parser.cpp — jinja2's expression grammar (see jinja_expr_parser.h).
#include "tokenizer/jinja_expr_parser.h"

#include <fmt/format.h>

namespace fg::jinja {

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::kData:
      return "template data";
    case TokenKind::kVariableBegin:
      return "begin of print statement";
    case TokenKind::kVariableEnd:
      return "end of print statement";
    case TokenKind::kBlockBegin:
      return "begin of statement block";
    case TokenKind::kBlockEnd:
      return "end of statement block";
    case TokenKind::kName:
    case TokenKind::kOperator:
      return fmt::format("'{}'", t.text);
    case TokenKind::kString:
      return "string";
    case TokenKind::kInteger:
      return "integer";
    case TokenKind::kFloat:
      return "float";
    case TokenKind::kEof:
      return "end of template";
  }
  return "token";
}

ExpressionParser::Nest::Nest(ExpressionParser& p) : p_(p) {
  if (++p_.nesting_ > p_.max_nesting_)
    p_.fail(fmt::format("template nested more than {} levels deep", p_.max_nesting_));
}

bool ExpressionParser::skip_op(std::string_view op) {
  if (!is_op(op)) return false;
  next();
  return true;
}

bool ExpressionParser::skip_name(std::string_view name) {
  if (!is_name(name)) return false;
  next();
  return true;
}

void ExpressionParser::expect_op(std::string_view op) {
  if (!is_op(op)) fail(fmt::format("expected '{}', got {}", op, describe(cur())));
  next();
}

void ExpressionParser::expect(TokenKind kind, std::string_view what) {
  if (cur().kind != kind) fail(fmt::format("expected {}, got {}", what, describe(cur())));
  next();
}

std::string ExpressionParser::expect_name() {
  if (cur().kind != TokenKind::kName) fail(fmt::format("expected a name, got {}", describe(cur())));
  return next().text;
}

ExprPtr ExpressionParser::make(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

ExprPtr ExpressionParser::finish(ExprPtr e) {
  int d = 0;
  auto visit = [&d](const ExprPtr& child) {
    if (child) d = std::max(d, child->depth);
  };
  visit(e->target);
  for (const ExprPtr& item : e->items) visit(item);
  for (const auto& kw : e->kwargs) visit(kw.second);
  visit(e->dyn_args);
  visit(e->dyn_kwargs);
  e->depth = d + 1;
  if (e->depth > max_depth_) fail(fmt::format("expression nested more than {} levels deep", max_depth_), e->line);
  return e;
}

ExprPtr ExpressionParser::binary(ExprKind kind, ExprPtr left, ExprPtr right, int line) {
  ExprPtr e = make(kind, line);
  e->items.push_back(std::move(left));
  e->items.push_back(std::move(right));
  return finish(std::move(e));
}

bool ExpressionParser::is_tuple_end(const std::vector<std::string_view>& extra_end) const {
  const Token& t = cur();
  if (t.kind == TokenKind::kVariableEnd || t.kind == TokenKind::kBlockEnd || t.kind == TokenKind::kEof) return true;
  if (t.kind == TokenKind::kOperator && t.text == ")") return true;
  return t.kind == TokenKind::kName && std::find(extra_end.begin(), extra_end.end(), t.text) != extra_end.end();
}

ExprPtr ExpressionParser::parse_tuple(bool simplified, bool with_condexpr,
                                      const std::vector<std::string_view>& extra_end, bool explicit_parentheses) {
  int line = cur().line;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) expect_op(",");
    if (is_tuple_end(extra_end)) break;
    items.push_back(simplified ? parse_primary() : parse_expression(with_condexpr));
    if (is_op(",")) {
      is_tuple = true;
    } else {
      break;
    }
    line = cur().line;
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parentheses) fail(fmt::format("expected an expression, got {}", describe(cur())));
  }
  ExprPtr e = make(ExprKind::kTuple, line);
  e->items = std::move(items);
  return finish(std::move(e));
}

ExprPtr ExpressionParser::parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

ExprPtr ExpressionParser::parse_condexpr() {
  Nest nest(*this);
  const int line = cur().line;
  ExprPtr expr1 = parse_or();
  while (skip_name("if")) {
    ExprPtr test = parse_or();
    ExprPtr otherwise = skip_name("else") ? parse_condexpr() : nullptr;
    ExprPtr e = make(ExprKind::kCondExpr, line);
    e->items.push_back(std::move(test));
    e->items.push_back(std::move(expr1));
    e->items.push_back(std::move(otherwise));
    expr1 = finish(std::move(e));
  }
  return expr1;
}

ExprPtr ExpressionParser::parse_or() {
  ExprPtr left = parse_and();
  while (is_name("or")) {
    const int line = next().line;
    left = binary(ExprKind::kOr, std::move(left), parse_and(), line);
  }
  return left;
}

ExprPtr ExpressionParser::parse_and() {
  ExprPtr left = parse_not();
  while (is_name("and")) {
    const int line = next().line;
    left = binary(ExprKind::kAnd, std::move(left), parse_not(), line);
  }
  return left;
}

ExprPtr ExpressionParser::parse_not() {
  if (is_name("not")) {
    Nest nest(*this);
    ExprPtr e = make(ExprKind::kNot, next().line);
    e->target = parse_not();
    return finish(std::move(e));
  }
  return parse_compare();
}

ExprPtr ExpressionParser::parse_compare() {
  int line = cur().line;
  ExprPtr first = parse_math1();
  ExprPtr e;
  while (true) {
    CompareOp op;
    const Token& t = cur();
    if (t.kind == TokenKind::kOperator && t.text == "==") {
      op = CompareOp::kEq;
    } else if (t.kind == TokenKind::kOperator && t.text == "!=") {
      op = CompareOp::kNe;
    } else if (t.kind == TokenKind::kOperator && t.text == "<") {
      op = CompareOp::kLt;
    } else if (t.kind == TokenKind::kOperator && t.text == "<=") {
      op = CompareOp::kLe;
    } else if (t.kind == TokenKind::kOperator && t.text == ">") {
      op = CompareOp::kGt;
    } else if (t.kind == TokenKind::kOperator && t.text == ">=") {
      op = CompareOp::kGe;
    } else if (is_name("in")) {
      op = CompareOp::kIn;
    } else if (is_name("not") && peek().kind == TokenKind::kName && peek().text == "in") {
      next();
      op = CompareOp::kNotIn;
    } else {
      break;
    }
    next();
    if (!e) {
      e = make(ExprKind::kCompare, line);
      e->items.push_back(std::move(first));
    }
    e->compare_ops.push_back(op);
    e->items.push_back(parse_math1());
    line = cur().line;
    e->line = line;
  }
  return e ? finish(std::move(e)) : std::move(first);
}

ExprPtr ExpressionParser::parse_math1() {
  ExprPtr left = parse_concat();
  while (is_op("+") || is_op("-")) {
    const Token& t = next();
    const BinaryOp op = t.text == "+" ? BinaryOp::kAdd : BinaryOp::kSub;
    ExprPtr e = binary(ExprKind::kBinary, std::move(left), parse_concat(), t.line);
    e->binary_op = op;
    left = std::move(e);
  }
  return left;
}

ExprPtr ExpressionParser::parse_concat() {
  const int line = cur().line;
  ExprPtr first = parse_math2();
  if (!is_op("~")) return first;
  ExprPtr e = make(ExprKind::kConcat, line);
  e->items.push_back(std::move(first));
  while (skip_op("~")) e->items.push_back(parse_math2());
  return finish(std::move(e));
}

ExprPtr ExpressionParser::parse_math2() {
  ExprPtr left = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token& t = next();
    const BinaryOp op = t.text == "*"    ? BinaryOp::kMul
                        : t.text == "/"  ? BinaryOp::kDiv
                        : t.text == "//" ? BinaryOp::kFloorDiv
                                         : BinaryOp::kMod;
    ExprPtr e = binary(ExprKind::kBinary, std::move(left), parse_pow(), t.line);
    e->binary_op = op;
    left = std::move(e);
  }
  return left;
}

ExprPtr ExpressionParser::parse_pow() {
  ExprPtr left = parse_unary(true);
  while (is_op("**")) {
    const int line = next().line;
    ExprPtr e = binary(ExprKind::kBinary, std::move(left), parse_unary(true), line);
    e->binary_op = BinaryOp::kPow;
    left = std::move(e);
  }
  return left;
}

ExprPtr ExpressionParser::parse_unary(bool with_filter) {
  Nest nest(*this);
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    const Token& t = next();
    node = make(t.text == "-" ? ExprKind::kNeg : ExprKind::kPos, t.line);
    node->target = parse_unary(false);
    node = finish(std::move(node));
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

ExprPtr ExpressionParser::parse_primary() {
  const Token& t = cur();
  ExprPtr node;
  switch (t.kind) {
    case TokenKind::kName: {
      node = make(ExprKind::kConst, t.line);
      if (t.text == "true" || t.text == "True") {
        node->value = Value::boolean(true);
      } else if (t.text == "false" || t.text == "False") {
        node->value = Value::boolean(false);
      } else if (t.text == "none" || t.text == "None") {
        node->value = Value::none();
      } else {
        node->kind = ExprKind::kName;
        node->name = t.text;
      }
      next();
      break;
    }
    case TokenKind::kString: {
      node = make(ExprKind::kConst, t.line);
      std::string text;
      while (cur().kind == TokenKind::kString) text += next().text;  // adjacent literals join
      node->value = Value::string(std::move(text));
      break;
    }
    case TokenKind::kInteger:
      node = make(ExprKind::kConst, t.line);
      node->value = Value::integer(t.int_value);
      next();
      break;
    case TokenKind::kFloat:
      node = make(ExprKind::kConst, t.line);
      node->value = Value::number(t.float_value);
      next();
      break;
    case TokenKind::kOperator:
      if (t.text == "(") {
        next();
        node = parse_tuple(false, true, {}, true);
        expect_op(")");
        return node;
      }
      if (t.text == "[") return parse_list();
      if (t.text == "{") return parse_dict();
      [[fallthrough]];
    default:
      fail(fmt::format("unexpected {}", describe(t)));
  }
  return finish(std::move(node));
}

ExprPtr ExpressionParser::parse_list() {
  ExprPtr e = make(ExprKind::kList, next().line);
  while (!is_op("]")) {
    if (!e->items.empty()) expect_op(",");
    if (is_op("]")) break;
    e->items.push_back(parse_expression(true));
  }
  expect_op("]");
  return finish(std::move(e));
}

ExprPtr ExpressionParser::parse_dict() {
  ExprPtr e = make(ExprKind::kDict, next().line);
  while (!is_op("}")) {
    if (!e->items.empty()) expect_op(",");
    if (is_op("}")) break;
    e->items.push_back(parse_expression(true));
    expect_op(":");
    e->items.push_back(parse_expression(true));
  }
  expect_op("}");
  return finish(std::move(e));
}

ExprPtr ExpressionParser::parse_postfix(ExprPtr node) {
  while (true) {
    if (is_op(".") || is_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr ExpressionParser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (is_op("|")) {
      node = parse_filter_chain(std::move(node));
    } else if (is_name("is")) {
      node = parse_test(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr ExpressionParser::parse_subscript(ExprPtr node) {
  const Token& t = next();
  if (t.text == ".") {
    const Token& attr = cur();
    if (attr.kind == TokenKind::kName) {
      ExprPtr e = make(ExprKind::kGetattr, t.line);
      e->target = std::move(node);
      e->name = next().text;
      return finish(std::move(e));
    }
    if (attr.kind != TokenKind::kInteger) fail("expected name or number");
    ExprPtr key = make(ExprKind::kConst, attr.line);
    key->value = Value::integer(next().int_value);
    ExprPtr e = make(ExprKind::kGetitem, t.line);
    e->target = std::move(node);
    e->items.push_back(finish(std::move(key)));
    return finish(std::move(e));
  }
  std::vector<ExprPtr> args;
  while (!is_op("]")) {
    if (!args.empty()) expect_op(",");
    args.push_back(parse_subscribed());
  }
  expect_op("]");
  ExprPtr e = make(ExprKind::kGetitem, t.line);
  e->target = std::move(node);
  if (args.size() == 1) {
    e->items.push_back(std::move(args[0]));
  } else {
    ExprPtr tuple = make(ExprKind::kTuple, t.line);
    tuple->items = std::move(args);
    e->items.push_back(finish(std::move(tuple)));
  }
  return finish(std::move(e));
}

ExprPtr ExpressionParser::parse_subscribed() {
  const int line = cur().line;
  std::vector<ExprPtr> args;
  if (skip_op(":")) {
    args.push_back(nullptr);
  } else {
    ExprPtr node = parse_expression(true);
    if (!is_op(":")) return node;
    next();
    args.push_back(std::move(node));
  }
  auto optional_expr = [&]() -> ExprPtr {
    if (is_op("]") || is_op(",")) return nullptr;
    return parse_expression(true);
  };
  args.push_back(is_op(":") ? nullptr : optional_expr());
  args.push_back(skip_op(":") ? optional_expr() : nullptr);
  ExprPtr e = make(ExprKind::kSlice, line);
  e->items = std::move(args);
  return finish(std::move(e));
}

void ExpressionParser::parse_call_args(Expr& e) {
  const int line = cur().line;
  expect_op("(");
  bool require_comma = false;
  auto ensure = [&](bool ok) {
    if (!ok) fail("invalid syntax for function call expression", line);
  };
  while (!is_op(")")) {
    if (require_comma) {
      expect_op(",");
      if (is_op(")")) break;
    }
    if (is_op("*")) {
      ensure(!e.dyn_args && !e.dyn_kwargs);
      next();
      e.dyn_args = parse_expression(true);
    } else if (is_op("**")) {
      ensure(!e.dyn_kwargs);
      next();
      e.dyn_kwargs = parse_expression(true);
    } else if (cur().kind == TokenKind::kName && peek().kind == TokenKind::kOperator && peek().text == "=") {
      ensure(!e.dyn_kwargs);
      std::string key = next().text;
      next();  // =
      e.kwargs.emplace_back(std::move(key), parse_expression(true));
    } else {
      ensure(!e.dyn_args && !e.dyn_kwargs && e.kwargs.empty());
      e.items.push_back(parse_expression(true));
    }
    require_comma = true;
  }
  expect_op(")");
}

ExprPtr ExpressionParser::parse_call(ExprPtr node) {
  ExprPtr e = make(ExprKind::kCall, cur().line);
  e->target = std::move(node);
  parse_call_args(*e);
  return finish(std::move(e));
}

std::string ExpressionParser::parse_dotted_name() {
  std::string name = expect_name();
  while (skip_op(".")) {
    name += '.';
    name += expect_name();
  }
  return name;
}

ExprPtr ExpressionParser::parse_filter_chain(ExprPtr node, bool start_inline) {
  while (is_op("|") || start_inline) {
    if (!start_inline) next();
    start_inline = false;
    const int line = cur().line;
    ExprPtr e = make(ExprKind::kFilter, line);
    e->name = parse_dotted_name();
    e->target = std::move(node);
    if (is_op("(")) parse_call_args(*e);
    node = finish(std::move(e));
  }
  return node;
}

ExprPtr ExpressionParser::parse_test(ExprPtr node) {
  const int line = next().line;  // is
  const bool negated = skip_name("not");
  ExprPtr e = make(ExprKind::kTest, line);
  e->name = parse_dotted_name();
  e->target = std::move(node);
  const Token& t = cur();
  if (is_op("(")) {
    parse_call_args(*e);
  } else if ((t.kind == TokenKind::kName || t.kind == TokenKind::kString || t.kind == TokenKind::kInteger ||
              t.kind == TokenKind::kFloat || is_op("(") || is_op("[") || is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    // `x is divisibleby 3`: one argument without parentheses.
    if (is_name("is")) fail("you cannot chain multiple tests with is");
    e->items.push_back(parse_postfix(parse_primary()));
  }
  node = finish(std::move(e));
  if (!negated) return node;
  ExprPtr n = make(ExprKind::kNot, line);
  n->target = std::move(node);
  return finish(std::move(n));
}

}  // namespace fg::jinja
