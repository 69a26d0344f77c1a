// tokenizer/jinja_filters.cpp — the filter table: jinja2's built-in filters by name, gathered
// from the family files (jinja_string_filters.cpp, jinja_sequence_filters.cpp,
// jinja_value_filters.cpp), plus the names jinja2 knows that chat templates do not use.
//
// Each filter takes the piped value and the call arguments bound by name as in jinja2's
// signatures.
#include "tokenizer/jinja_filters.h"

#include <initializer_list>
#include <unordered_map>

#include "tokenizer/jinja_filter_families.h"

namespace fg::jinja {

namespace {

Value f_unsupported(Interpreter&, const Value&, const CallArgs&) {
  raise("this filter is not supported in chat templates");
}

// jinja2 has these; chat templates do not use them.
constexpr NamedFilter kUnsupportedFilters[] = {
    {"filesizeformat", f_unsupported}, {"groupby", f_unsupported},   {"pprint", f_unsupported},
    {"random", f_unsupported},         {"slice", f_unsupported},     {"striptags", f_unsupported},
    {"truncate", f_unsupported},       {"urlencode", f_unsupported}, {"urlize", f_unsupported},
    {"wordwrap", f_unsupported},       {"xmlattr", f_unsupported},
};

}  // namespace

FilterFn find_filter(std::string_view name) {
  static const std::unordered_map<std::string_view, FilterFn> table = [] {
    std::unordered_map<std::string_view, FilterFn> all;
    for (std::span<const NamedFilter> family :
         {string_filters(), sequence_filters(), value_filters(), std::span<const NamedFilter>(kUnsupportedFilters)})
      for (const NamedFilter& filter : family) all.emplace(filter.name, filter.fn);
    return all;
  }();
  const auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace fg::jinja
