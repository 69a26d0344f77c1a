// tests/test_support.h — shared helpers of the test binary: fixture paths, reference tensors,
// and small comparisons whose tolerances are stated where they are used.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "model/safetensors.h"

namespace fg::test {

// ../shared/testdata (or $FULLGRAPH_TESTDATA when set).
inline std::string testdata_dir() {
  const char* env = std::getenv("FULLGRAPH_TESTDATA");
  return env ? env : FULLGRAPH_TESTDATA;
}
inline std::string model_fixture(const std::string& name) { return testdata_dir() + "/models/" + name; }

inline const std::vector<std::string>& fixture_models() {
  static const std::vector<std::string> names = {"tiny-llama", "tiny-llama3-rope", "tiny-qwen2", "tiny-qwen3"};
  return names;
}

template <typename T>
std::vector<T> tensor_values(const Tensor& t) {
  std::vector<T> out(static_cast<size_t>(t.numel()));
  std::copy_n(t.as<const T>(), out.size(), out.begin());
  return out;
}

inline float max_abs(const std::vector<float>& v) {
  float m = 0.0f;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0.0f;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

}  // namespace fg::test
