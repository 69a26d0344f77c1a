// tests/bench_test_support.h — helpers shared by the bench-client tests (test_bench_serve.cpp and
// test_bench_serve_e2e.cpp).
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/error.h"

namespace fg::bench::test {

// Expects `fn` to throw fg::Error whose message contains `needle`.
template <typename Fn>
void expect_error(Fn&& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr(needle));
  }
}

// Whether the file at `path` starts with the PNG signature.
inline bool is_png(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  return in.good() && std::string(magic, 8) == std::string("\x89PNG\r\n\x1a\n", 8);
}

}  // namespace fg::bench::test
