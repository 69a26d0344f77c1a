// bench/common/number_list.h — the comma-separated numbers of a benchmark flag ("1,8,64",
// "50,90,99"), parsed once for every command that takes such a list.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace fg::bench {

// The items of `text` split at commas, each parsed whole as a number. Raises fg::Error
// "FLAG: 'ITEM' is not WHAT" for an item that is not a number or that `valid` refuses (an empty
// item, as in "50,,99", is not a number).
std::vector<double> parse_number_list(const std::string& text, const char* flag, const char* what,
                                      const std::function<bool(double)>& valid);

}  // namespace fg::bench
