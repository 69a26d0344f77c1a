// tokenizer/jinja_ast.h — the syntax tree of a parsed chat template.
//
// Two node types, Expr and Stmt, each a tagged struct rather than a class hierarchy: the
// interpreter switches on the kind, and a node carries only a few optional fields. Every node
// knows its source line (for error messages) and every Expr its depth, which the parser caps so
// that evaluating or destroying a tree never recurses without bound.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja_value.h"

namespace fg::jinja {

enum class ExprKind : uint8_t {
  kConst,     // value
  kName,      // name
  kList,      // items
  kTuple,     // items
  kDict,      // items: key, value, key, value, ...
  kGetattr,   // target.name
  kGetitem,   // target[items[0]]
  kSlice,     // items[0]:items[1]:items[2], each possibly null (only as a Getitem key)
  kCall,      // target(items..., kwargs..., *dyn_args, **dyn_kwargs)
  kFilter,    // target | name(args); target is null inside {% filter %} and {% set x | f %}
  kTest,      // target is name(args)
  kNeg,       // -target
  kPos,       // +target
  kNot,       // not target
  kBinary,    // items[0] op items[1]
  kCompare,   // items[0] ops[0] items[1] ops[1] items[2] ... (chained like Python)
  kConcat,    // items[0] ~ items[1] ~ ...
  kAnd,       // items[0] and items[1]
  kOr,        // items[0] or items[1]
  kCondExpr,  // items[1] if items[0] else items[2] (items[2] may be null)
};

enum class BinaryOp : uint8_t { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow };
enum class CompareOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind = ExprKind::kConst;
  int line = 0;
  int depth = 1;
  Value value;
  std::string name;
  BinaryOp binary_op = BinaryOp::kAdd;
  std::vector<CompareOp> compare_ops;
  ExprPtr target;
  std::vector<ExprPtr> items;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  ExprPtr dyn_args;
  ExprPtr dyn_kwargs;
};

// The left side of `set`, `for` and `with`: a name, a (nested) tuple of names, or ns.attr.
struct Target {
  enum class Kind : uint8_t { kName, kTuple, kNamespaceAttr };
  Kind kind = Kind::kName;
  std::string name;  // the variable, or the namespace variable
  std::string attr;  // kNamespaceAttr
  std::vector<Target> items;
};

enum class StmtKind : uint8_t {
  kData,      // text
  kPrint,     // {{ expr }}
  kIf,        // branches, else_body
  kFor,       // for target in expr [if condition] body [else else_body]
  kSet,       // set target = expr
  kSetBlock,  // set target [| filter expr] body endset
  kMacro,     // macro
  kBreak,
  kContinue,
  kFilterBlock,  // filter expr body endfilter
  kWith,         // with assignments body endwith
  kScope,        // {% generation %} body: its own scope, output passed through
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct MacroDef {
  std::string name;
  int line = 0;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // one per param, null when the param has no default
  Body body;
};

struct Stmt {
  StmtKind kind = StmtKind::kData;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr condition;
  Target target;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::vector<std::pair<Target, ExprPtr>> assignments;
  std::unique_ptr<MacroDef> macro;
};

}  // namespace fg::jinja
