// tokenizer/jinja_json.cpp — JSON to values and Python-compatible json.dumps (see jinja_json.h).
#include "tokenizer/jinja_json.h"

#include <fmt/format.h>

#include <cmath>

#include "tokenizer/jinja_pystr.h"

namespace fg::jinja {

namespace {

void write_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out.push_back('"');
  const std::u32string cps = pystr::decode(s);
  for (char32_t c : cps) {
    switch (c) {
      case U'"':
        out.append("\\\"");
        continue;
      case U'\\':
        out.append("\\\\");
        continue;
      case U'\n':
        out.append("\\n");
        continue;
      case U'\r':
        out.append("\\r");
        continue;
      case U'\t':
        out.append("\\t");
        continue;
      case U'\b':
        out.append("\\b");
        continue;
      case U'\f':
        out.append("\\f");
        continue;
      default:
        break;
    }
    if (c < 0x20 || (ensure_ascii && c >= 0x7F)) {
      if (c >= 0x10000) {
        const char32_t v = c - 0x10000;
        out.append(fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)));
      } else {
        out.append(fmt::format("\\u{:04x}", static_cast<unsigned>(c)));
      }
    } else {
      pystr::append_utf8(out, c);
    }
  }
  out.push_back('"');
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return py_float_repr(d);
}

// Python's rule for dict keys in json.dumps: str as is, numbers and constants converted.
std::string key_text(const Value& key) {
  switch (key.kind()) {
    case Value::Kind::String:
      return key.str();
    case Value::Kind::Int:
      return std::to_string(key.as_int());
    case Value::Kind::Float:
      return float_json(key.as_double());
    case Value::Kind::Bool:
      return key.as_bool() ? "true" : "false";
    case Value::Kind::None:
      return "null";
    default:
      raise("keys must be str, int, float, bool or None, not {}", type_name(key));
  }
}

void newline(std::string& out, const JsonStyle& style, int level) {
  out.push_back('\n');
  for (int i = 0; i < level; ++i) out.append(*style.indent);
}

void write_value(std::string& out, const Value& v, const JsonStyle& style, Meter& meter, int level) {
  meter.spend(1);
  switch (v.kind()) {
    case Value::Kind::None:
      out.append("null");
      break;
    case Value::Kind::Bool:
      out.append(v.as_bool() ? "true" : "false");
      break;
    case Value::Kind::Int:
      out.append(std::to_string(v.as_int()));
      break;
    case Value::Kind::Float:
      out.append(float_json(v.as_double()));
      break;
    case Value::Kind::String:
      write_string(out, v.str(), style.ensure_ascii);
      break;
    case Value::Kind::List: {
      if (!v.is_plain_sequence()) raise("Object of type {} is not JSON serializable", type_name(v));
      const auto& items = v.items();
      if (items.empty()) {
        out.append("[]");
        break;
      }
      out.push_back('[');
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out.append(style.item_separator);
        if (style.indent) newline(out, style, level + 1);
        write_value(out, items[i], style, meter, level + 1);
        meter.check_size(out.size());
      }
      if (style.indent) newline(out, style, level);
      out.push_back(']');
      break;
    }
    case Value::Kind::Dict: {
      const auto& entries = v.dict_data().entries;
      if (entries.empty()) {
        out.append("{}");
        break;
      }
      std::vector<const std::pair<Value, Value>*> order;
      for (const auto& entry : entries) order.push_back(&entry);
      if (style.sort_keys) {
        std::vector<Value> keyed;  // (key, position) pairs, sorted by key as sorted() would
        for (size_t i = 0; i < entries.size(); ++i)
          keyed.push_back(Value::list({entries[i].first, Value::integer(static_cast<int64_t>(i))}, true));
        stable_sort_values(keyed,
                           [&](const Value& a, const Value& b) { return less(a.items()[0], b.items()[0], meter); });
        order.clear();
        for (const Value& k : keyed) order.push_back(&entries[static_cast<size_t>(k.items()[1].as_int())]);
      }
      out.push_back('{');
      for (size_t i = 0; i < order.size(); ++i) {
        if (i) out.append(style.item_separator);
        if (style.indent) newline(out, style, level + 1);
        write_string(out, key_text(order[i]->first), style.ensure_ascii);
        out.append(style.key_separator);
        write_value(out, order[i]->second, style, meter, level + 1);
        meter.check_size(out.size());
      }
      if (style.indent) newline(out, style, level);
      out.push_back('}');
      break;
    }
    default:
      raise("Object of type {} is not JSON serializable", type_name(v));
  }
  meter.check_size(out.size());
}

template <typename Json>
Value from_json(const Json& j, int depth) {
  if (depth > kMaxValueDepth) raise("JSON value nested more than {} levels deep", kMaxValueDepth);
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value::none();
    case nlohmann::json::value_t::boolean:
      return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value::integer(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = j.template get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) raise("JSON integer {} is too large", u);
      return Value::integer(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value::number(j.template get<double>());
    case nlohmann::json::value_t::string:
      return Value::string(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& item : j) items.push_back(from_json(item, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      DictBuilder dict;
      for (auto it = j.begin(); it != j.end(); ++it)
        dict.set(Value::string(it.key()), from_json(it.value(), depth + 1));
      return dict.build();
    }
    default:
      raise("unsupported JSON value");
  }
}

}  // namespace

void write_json(std::string& out, const Value& v, const JsonStyle& style, Meter& meter) {
  write_value(out, v, style, meter, 0);
}

Value value_from_json(const nlohmann::ordered_json& j) { return from_json(j, 1); }
Value value_from_json(const nlohmann::json& j) { return from_json(j, 1); }

}  // namespace fg::jinja
