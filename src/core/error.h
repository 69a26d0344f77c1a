// core/error.h — the one error type of fullgraph and the checks that raise it.
//
// Every failure at an edge (a file, a config field, a request, a CUDA call) becomes an fg::Error
// whose message names the thing that is wrong. FG_CHECK adds nothing but the message; internal
// invariants use FG_ASSERT, which adds file:line because the message alone would not locate them.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace fg {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace fg

// Raises fg::Error with a formatted message when `cond` is false.
#define FG_CHECK(cond, ...)            \
  do {                                 \
    if (!(cond)) ::fg::fail(__VA_ARGS__); \
  } while (0)

// An internal invariant: a failure is a bug in fullgraph, so it reports where.
#define FG_ASSERT(cond)                                                                \
  do {                                                                                 \
    if (!(cond)) ::fg::fail("internal error: {} failed at {}:{}", #cond, __FILE__, __LINE__); \
  } while (0)
