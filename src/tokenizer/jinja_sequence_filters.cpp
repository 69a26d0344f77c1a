// tokenizer/jinja_sequence_filters.cpp — jinja2's filters over sequences and mappings: picking
// (first, last, min, max), ordering (sort, dictsort, reverse, unique), reshaping (batch, items,
// list), transforming (map, select and reject, join, sum) and length.
//
// Where jinja2 returns a generator (map, select, unique, items, batch, reverse) so does this,
// through GeneratorObject. Filters that walk a sequence spend one step per item (through
// Interpreter::iterate) so that the step limit covers their work too.
#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/jinja_filter_families.h"
#include "tokenizer/jinja_interpreter.h"
#include "tokenizer/jinja_operators.h"
#include "tokenizer/jinja_pystr.h"

namespace fg::jinja {

namespace {

using Items = std::vector<Value>;

// jinja2's make_attrgetter: "a.b.0" walks item lookups; integer parts index sequences.
Value get_path(Interpreter& in, const Value& item, const Value& attribute, const Value* fallback = nullptr) {
  if (attribute.is_integral()) return in.getitem(item, attribute);
  const std::string path = to_str(attribute, in.meter());
  Value current = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool numeric = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    current = numeric && part.size() < 18 ? in.getitem(current, Value::integer(std::stoll(part)))
                                          : in.getitem(current, Value::string(part));
    if (fallback && current.is_undefined()) current = *fallback;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return current;
}

// jinja2's ignore_case: strings compare lowercased unless case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(pystr::lower(v.str()));
  return v;
}

// jinja2's map/select/unique/items/batch/reverse return generators (see GeneratorObject).
// `prologue` runs on the first pull and says whether to iterate `input` at all; `step` turns
// each item into an output item, or skips it.
using ItemStep = std::function<std::optional<Value>(Interpreter&, const Value&)>;

Value lazy_over(std::string repr, Value input, std::function<bool(Interpreter&)> prologue, ItemStep step) {
  struct State {
    bool started = false;
    Items items;
    size_t pos = 0;
  };
  auto state = std::make_shared<State>();
  return Value::object(
      std::make_shared<GeneratorObject>(std::move(repr),
                                        [state, input = std::move(input), prologue = std::move(prologue),
                                         step = std::move(step)](Interpreter& in) -> std::optional<Value> {
                                          if (!state->started) {
                                            state->started = true;
                                            if (!prologue || prologue(in)) state->items = in.iterate(input);
                                          }
                                          while (state->pos < state->items.size()) {
                                            const Value item = state->items[state->pos++];
                                            if (std::optional<Value> out = step(in, item)) return out;
                                          }
                                          return std::nullopt;
                                        }));
}

// A generator whose items are all computed on the first pull.
Value lazy_list(std::string repr, std::function<Items(Interpreter&)> compute) {
  struct State {
    std::optional<Items> items;
    size_t pos = 0;
  };
  auto state = std::make_shared<State>();
  return Value::object(std::make_shared<GeneratorObject>(
      std::move(repr), [state, compute = std::move(compute)](Interpreter& in) -> std::optional<Value> {
        if (!state->items) state->items = compute(in);
        if (state->pos >= state->items->size()) return std::nullopt;
        return (*state->items)[state->pos++];
      }));
}

Value f_batch(Interpreter&, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "batch", {"linecount", "fill_with"}, 1);
  const int64_t n = a.get_int(0, 1);
  const Value fill = a.get(1);
  const bool filling = a.has(1) && !fill.is_none();
  return lazy_list("<generator object do_batch>", [v, n, fill, filling](Interpreter& in) {
    Items out, row;
    for (Value& item : in.iterate(v)) {
      if (static_cast<int64_t>(row.size()) == n) {
        out.push_back(Value::list(std::move(row)));
        row.clear();
      }
      row.push_back(std::move(item));
    }
    if (!row.empty()) {
      while (filling && static_cast<int64_t>(row.size()) < n) row.push_back(fill);
      out.push_back(Value::list(std::move(row)));
    }
    return out;
  });
}

Value f_dictsort(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "dictsort", {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) raise("dictsort expects a mapping, got '{}'", type_name(v));
  const bool case_sensitive = a.get_bool(0, false), reverse = a.get_bool(2, false);
  const std::string by = a.get_str(1, "key");
  if (by != "key" && by != "value") raise("You can only sort by either 'key' or 'value'");
  const size_t pos = by == "key" ? 0 : 1;
  Items pairs;
  for (const auto& [key, value] : v.dict_data().entries) pairs.push_back(Value::list({key, value}, true));
  stable_sort_values(pairs, [&](const Value& x, const Value& y) {
    const Value kx = sort_key(x.items()[pos], case_sensitive), ky = sort_key(y.items()[pos], case_sensitive);
    return reverse ? less(ky, kx, in.meter()) : less(kx, ky, in.meter());
  });
  return Value::list(std::move(pairs));
}

Value f_first(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "first", {});
  if (const GeneratorObject* gen = as_generator(v)) {  // next(iter(gen)) takes one item
    if (std::optional<Value> item = gen->next(in)) return *item;
    return Value::undefined("No first item, sequence was empty.");
  }
  if (v.is_list()) return v.items().empty() ? Value::undefined("No first item, sequence was empty.") : v.items()[0];
  Items items = in.iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items[0];
}

Value f_last(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "last", {});
  if (as_generator(v)) raise("'generator' object is not reversible");
  if (v.is_list()) return v.items().empty() ? Value::undefined("No last item, sequence was empty.") : v.items().back();
  Items items = in.iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value f_items(Interpreter&, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "items", {});
  return lazy_list("<generator object do_items>", [v](Interpreter&) {
    Items pairs;
    if (v.is_undefined()) return pairs;
    if (!v.is_dict()) raise("Can only get item pairs from a mapping.");
    for (const auto& [key, value] : v.dict_data().entries) pairs.push_back(Value::list({key, value}, true));
    return pairs;
  });
}

Value f_join(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "join", {"d", "attribute"});
  const std::string sep = a.has(0) ? soft_str(in, a.get(0)) : "";
  std::string out;
  bool first = true;
  for (const Value& item : in.iterate(v)) {
    if (!first) out += sep;
    first = false;
    append_str(out, a.has(1) && !a.get(1).is_none() ? get_path(in, item, a.get(1)) : item, in.meter());
    in.meter().check_size(out.size());
  }
  return in.make_string(std::move(out));
}

Value f_length(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "length", {});
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return Value::integer(0);
    case Value::Kind::String:
      in.meter().spend(static_cast<int64_t>(v.str().size() / 64));
      return Value::integer(pystr::length(v.str()));
    case Value::Kind::List:
      return Value::integer(static_cast<int64_t>(v.items().size()));
    case Value::Kind::Dict:
      return Value::integer(static_cast<int64_t>(v.dict_data().entries.size()));
    default:
      raise("object of type '{}' has no len()", type_name(v));
  }
}

Value f_list(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "list", {});
  return Value::list(in.iterate(v));
}

Value f_map(Interpreter&, const Value& v, const CallArgs& args) {
  // jinja2 checks its arguments only once the generator runs, and only for a true input.
  return lazy_over(
      "<generator object sync_do_map>", v,
      [v, args](Interpreter&) {
        if (!truthy(v)) return false;
        if (args.positional.empty()) {
          BoundArgs a(args, "map", {"attribute", "default"});
          if (!a.has(0)) raise("map requires a filter argument");
        }
        return true;
      },
      [args](Interpreter& in, const Value& item) -> std::optional<Value> {
        if (args.positional.empty()) {
          BoundArgs a(args, "map", {"attribute", "default"});
          const Value fallback = a.get(1);
          return get_path(in, item, a.get(0), a.has(1) ? &fallback : nullptr);
        }
        CallArgs rest;
        rest.positional.assign(args.positional.begin() + 1, args.positional.end());
        rest.keyword = args.keyword;
        return in.apply_filter(to_str(args.positional[0], in.meter()), item, rest);
      });
}

Value aggregate(Interpreter& in, const Value& v, const CallArgs& args, const char* name, bool want_max) {
  BoundArgs a(args, name, {"case_sensitive", "attribute"});
  const bool case_sensitive = a.get_bool(0, false);
  const Items items = in.iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& item) {
    return sort_key(a.has(1) && !a.get(1).is_none() ? get_path(in, item, a.get(1)) : item, case_sensitive);
  };
  size_t best = 0;
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    if (want_max ? less(best_key, k, in.meter()) : less(k, best_key, in.meter())) {
      best = i;
      best_key = std::move(k);
    }
  }
  return items[best];
}

Value f_max(Interpreter& in, const Value& v, const CallArgs& args) { return aggregate(in, v, args, "max", true); }
Value f_min(Interpreter& in, const Value& v, const CallArgs& args) { return aggregate(in, v, args, "min", false); }

// select/reject/selectattr/rejectattr share jinja2's select_or_reject, a generator.
Value select_or_reject(const Value& v, const CallArgs& args, bool keep_when, bool by_attribute) {
  auto prologue = [v, args, by_attribute](Interpreter&) {
    if (by_attribute && args.positional.empty()) raise("Missing parameter for attribute name");
    return truthy(v);
  };
  auto step = [args, keep_when, by_attribute](Interpreter& in, const Value& item) -> std::optional<Value> {
    const size_t off = by_attribute ? 1 : 0;
    const Value subject = by_attribute ? get_path(in, item, args.positional[0]) : item;
    bool result;
    if (args.positional.size() > off) {
      CallArgs test_args;
      test_args.positional.assign(args.positional.begin() + static_cast<ptrdiff_t>(off) + 1, args.positional.end());
      test_args.keyword = args.keyword;
      result = in.apply_test(to_str(args.positional[off], in.meter()), subject, test_args);
    } else {
      result = truthy(subject);
    }
    return result == keep_when ? std::optional<Value>(item) : std::nullopt;
  };
  return lazy_over("<generator object select_or_reject>", v, prologue, step);
}

Value f_select(Interpreter&, const Value& v, const CallArgs& a) { return select_or_reject(v, a, true, false); }
Value f_reject(Interpreter&, const Value& v, const CallArgs& a) { return select_or_reject(v, a, false, false); }
Value f_selectattr(Interpreter&, const Value& v, const CallArgs& a) { return select_or_reject(v, a, true, true); }
Value f_rejectattr(Interpreter&, const Value& v, const CallArgs& a) { return select_or_reject(v, a, false, true); }

Value f_reverse(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "reverse", {});
  if (v.is_string()) {
    std::u32string cps = pystr::decode(v.str());
    std::reverse(cps.begin(), cps.end());
    return in.make_string(pystr::encode(cps));
  }
  // reversed() gives an iterator for sequences and dicts; anything else is listed and reversed.
  const char* iterator = nullptr;
  if (v.is_undefined()) {
    iterator = "<reversed object>";
  } else if (v.is_dict()) {
    iterator = "<dict_reversekeyiterator object>";
  } else if (v.is_list()) {
    switch (v.seq_kind()) {
      case SeqKind::kList:
        iterator = "<list_reverseiterator object>";
        break;
      case SeqKind::kRange:
        iterator = "<range_iterator object>";
        break;
      case SeqKind::kTuple:
        iterator = "<reversed object>";
        break;
      default:
        iterator = "<dict_reverseiterator object>";
    }
  }
  if (iterator) {
    return lazy_list(iterator, [v](Interpreter& in) {
      Items items = in.iterate(v);
      std::reverse(items.begin(), items.end());
      return items;
    });
  }
  Items items = in.iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value f_sort(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "sort", {"reverse", "case_sensitive", "attribute"});
  const bool reverse = a.get_bool(0, false), case_sensitive = a.get_bool(1, false);
  std::vector<Value> attributes;
  if (a.has(2) && !a.get(2).is_none()) {
    if (a.get(2).is_string()) {
      for (const std::string& part : pystr::split(a.get(2).str(), std::string(","), -1))
        attributes.push_back(Value::string(pystr::strip(part, std::nullopt, true, true)));
    } else {
      attributes.push_back(a.get(2));
    }
  }
  Items items = in.iterate(v);
  auto key = [&](const Value& item) {
    if (attributes.empty()) return sort_key(item, case_sensitive);
    if (attributes.size() == 1) return sort_key(get_path(in, item, attributes[0]), case_sensitive);
    Items parts;
    for (const Value& attr : attributes) parts.push_back(sort_key(get_path(in, item, attr), case_sensitive));
    return Value::list(std::move(parts), true);
  };
  Items keyed;  // (key, item) so that each key is computed once, as sorted(key=...) does
  for (Value& item : items) keyed.push_back(Value::list({key(item), item}, true));
  stable_sort_values(keyed, [&](const Value& x, const Value& y) {
    return reverse ? less(y.items()[0], x.items()[0], in.meter()) : less(x.items()[0], y.items()[0], in.meter());
  });
  Items out;
  for (const Value& k : keyed) out.push_back(k.items()[1]);
  return Value::list(std::move(out));
}

Value f_sum(Interpreter& in, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "sum", {"attribute", "start"});
  Value total = a.get_or(1, Value::integer(0));
  for (const Value& item : in.iterate(v))
    total = binary_op(BinaryOp::kAdd, total, a.has(0) && !a.get(0).is_none() ? get_path(in, item, a.get(0)) : item,
                      in.meter());
  return total;
}

Value f_unique(Interpreter&, const Value& v, const CallArgs& args) {
  BoundArgs a(args, "unique", {"case_sensitive", "attribute"});
  const bool case_sensitive = a.get_bool(0, false);
  const Value attribute = a.get(1);
  const bool by_attribute = a.has(1) && !attribute.is_none();
  auto seen = std::make_shared<Items>();
  return lazy_over(
      "<generator object sync_do_unique>", v, nullptr,
      [seen, case_sensitive, attribute, by_attribute](Interpreter& in, const Value& item) -> std::optional<Value> {
        Value key = sort_key(by_attribute ? get_path(in, item, attribute) : item, case_sensitive);
        require_hashable(key);
        for (const Value& s : *seen)
          if (equals(s, key, in.meter())) return std::nullopt;
        seen->push_back(std::move(key));
        return item;
      });
}

}  // namespace

std::span<const NamedFilter> sequence_filters() {
  static constexpr NamedFilter kFilters[] = {
      {"batch", f_batch},
      {"count", f_length},
      {"dictsort", f_dictsort},
      {"first", f_first},
      {"items", f_items},
      {"join", f_join},
      {"last", f_last},
      {"length", f_length},
      {"list", f_list},
      {"map", f_map},
      {"max", f_max},
      {"min", f_min},
      {"reject", f_reject},
      {"rejectattr", f_rejectattr},
      {"reverse", f_reverse},
      {"select", f_select},
      {"selectattr", f_selectattr},
      {"sort", f_sort},
      {"sum", f_sum},
      {"unique", f_unique},
  };
  return kFilters;
}

}  // namespace fg::jinja
