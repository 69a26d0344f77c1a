// bench/common/number_list.cpp — see number_list.h.
#include "bench/common/number_list.h"

#include <algorithm>
#include <exception>

#include "core/error.h"

namespace fg::bench {

std::vector<double> parse_number_list(const std::string& text, const char* flag, const char* what,
                                      const std::function<bool(double)>& valid) {
  std::vector<double> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    size_t used = 0;
    double v = 0.0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    FG_CHECK(!item.empty() && used == item.size() && valid(v), "{}: '{}' is not {}", flag, item, what);
    out.push_back(v);
    start = comma + 1;
  }
  return out;
}

}  // namespace fg::bench
