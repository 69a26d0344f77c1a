// tokenizer/jinja_string_filters.cpp — jinja2's string filters: case, padding, indentation,
// replacement, escaping, %-formatting and word counting.
//
// Each converts its input with str() first (jinja2's soft_str), so `none|trim` is "None" and an
// undefined value reads as "". The result is built through Interpreter::make_string so that the
// output size limit covers it.
#include <string>

#include "tokenizer/jinja_filter_families.h"
#include "tokenizer/jinja_interpreter.h"
#include "tokenizer/jinja_operators.h"
#include "tokenizer/jinja_pystr.h"

namespace fg::jinja {

namespace {

Value f_capitalize(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "capitalize", {});
  return in.make_string(pystr::capitalize(soft_str(in, v)));
}

Value f_center(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "center", {"width"});
  const std::string s = soft_str(in, v);
  const int64_t width = a.get_int(0, 80), len = pystr::length(s);
  if (width <= len) return in.make_string(s);
  in.meter().check_size(static_cast<size_t>(width));
  const int64_t margin = width - len;
  const int64_t left = margin / 2 + (margin & width & 1);  // CPython's str.center rounding
  return in.make_string(std::string(static_cast<size_t>(left), ' ') + s +
                        std::string(static_cast<size_t>(margin - left), ' '));
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

Value f_escape(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "escape", {});
  return in.make_string(html_escape(soft_str(in, v)));
}

Value f_format(Interpreter& in, const Value& v, const CallArgs& args) {
  if (!args.keyword.empty() && !args.positional.empty())
    raise("can't handle positional and keyword arguments at the same time");
  if (!args.keyword.empty()) {
    DictBuilder kw;
    for (const auto& [name, value] : args.keyword) kw.set(Value::string(name), value);
    return in.make_string(percent_format(soft_str(in, v), kw.build(), in.meter()));
  }
  return in.make_string(percent_format(soft_str(in, v), Value::list(args.positional, true), in.meter()));
}

Value f_indent(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "indent", {"width", "first", "blank"});
  std::string indention;
  if (a.has(0) && a.get(0).is_string()) {
    indention = a.get(0).str();
  } else {
    const int64_t width = a.get_int(0, 4);
    if (width > 0) {
      in.meter().check_size(static_cast<size_t>(width));
      indention.assign(static_cast<size_t>(width), ' ');
    }
  }
  const bool first = a.get_bool(1, false), blank = a.get_bool(2, false);
  // jinja2 appends "\n" to the value itself, so anything but a string fails.
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_string()) raise("unsupported operand type(s) for +=: '{}' and 'str'", type_name(v));
  const std::vector<std::string> lines = pystr::splitlines(v.str() + "\n", false);
  in.meter().spend(static_cast<int64_t>(lines.size()));
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out.push_back('\n');
      if (blank || !lines[i].empty()) out += indention;
    }
    out += lines[i];
    in.meter().check_size(out.size());
  }
  if (first) out = indention + out;
  return in.make_string(std::move(out));
}

Value f_lower(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "lower", {});
  return in.make_string(pystr::lower(soft_str(in, v)));
}

Value f_upper(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "upper", {});
  return in.make_string(pystr::upper(soft_str(in, v)));
}

Value f_replace(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "replace", {"old", "new", "count"}, 2);
  const std::string s = soft_str(in, v), old = soft_str(in, a.get(0)), with = soft_str(in, a.get(1));
  const int64_t count = a.has(2) && !a.get(2).is_none() ? a.get_int(2, -1) : -1;
  if (!with.empty()) {
    // Worst case every position is replaced; refuse before building something enormous.
    const size_t hits = old.empty() ? s.size() + 1 : s.size() / old.size();
    if (with.size() > old.size() && hits > 0 && (with.size() - old.size()) > in.meter().max_bytes() / hits)
      in.meter().check_size(s.size() + hits * (with.size() - old.size()));
  }
  in.meter().spend(static_cast<int64_t>(s.size() / 64));
  return in.make_string(pystr::replace(s, old, with, count));
}

Value f_safe(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "safe", {});
  return in.make_string(soft_str(in, v));  // no autoescaping, so markup is just text
}

Value f_string(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "string", {});
  return v.is_string() ? v : in.make_string(soft_str(in, v));
}

Value f_title(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "title", {});
  // jinja2 splits on runs of `-`, whitespace and opening brackets and capitalises each word's
  // first character (upper, not title case), lowering the rest.
  const std::u32string s = pystr::decode(soft_str(in, v));
  auto separator = [](char32_t c) {
    return c == U'-' || c == U'(' || c == U'{' || c == U'[' || c == U'<' || pystr::is_space(c);
  };
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    const bool sep = separator(s[i]);
    while (j < s.size() && separator(s[j]) == sep) ++j;
    const std::string part = pystr::encode(std::u32string_view(s).substr(i, j - i));
    if (sep) {
      out += part;
    } else {
      std::string head;
      pystr::append_utf8(head, s[i]);
      out += pystr::upper(head) + pystr::lower(pystr::encode(std::u32string_view(s).substr(i + 1, j - i - 1)));
    }
    i = j;
  }
  return in.make_string(std::move(out));
}

Value f_trim(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "trim", {"chars"});
  std::optional<std::string> chars;
  if (a.has(0) && !a.get(0).is_none()) chars = require_str(a.get(0), "trim() argument 'chars'");
  return in.make_string(pystr::strip(soft_str(in, v), chars, true, true));
}

Value f_wordcount(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "wordcount", {});
  int64_t words = 0;
  bool in_word = false;
  for (char32_t c : pystr::decode(soft_str(in, v))) {
    const bool word_char = c == U'_' || pystr::is_alnum(c);
    if (word_char && !in_word) ++words;
    in_word = word_char;
  }
  return Value::integer(words);
}

}  // namespace

std::span<const NamedFilter> string_filters() {
  static constexpr NamedFilter kFilters[] = {
      {"capitalize", f_capitalize},
      {"center", f_center},
      {"e", f_escape},
      {"escape", f_escape},
      {"forceescape", f_escape},
      {"format", f_format},
      {"indent", f_indent},
      {"lower", f_lower},
      {"replace", f_replace},
      {"safe", f_safe},
      {"string", f_string},
      {"title", f_title},
      {"trim", f_trim},
      {"upper", f_upper},
      {"wordcount", f_wordcount},
  };
  return kFilters;
}

}  // namespace fg::jinja
