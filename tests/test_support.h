// tests/test_support.h — shared helpers of the test binary: fixture paths, reference tensors,
// and small comparisons whose tolerances are stated where they are used.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/safetensors.h"
#include "runner/step_io.h"
#include "tokenizer/tokenizer.h"

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

inline std::string tokenizer_dir(const std::string& name) { return testdata_dir() + "/tokenizers/" + name; }

// The tokenizer fixture `name`, loaded once per test binary (about a second each).
inline const Tokenizer& tokenizer_fixture(const std::string& name) {
  static std::map<std::string, Tokenizer> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end()) it = loaded.emplace(name, Tokenizer::from_file(tokenizer_dir(name) + "/tokenizer.json")).first;
  return it->second;
}

// The message of the fg::Error that `f` throws, or "(no error)".
// One request of a reference step (upload_step): `tokens` on top of `num_computed` tokens already
// cached in `blocks`; all_logits asks for every position's logits.
inline ScheduledRequest reference_request(std::span<const int32_t> tokens, int64_t num_computed,
                                          std::span<const int32_t> blocks, bool all_logits) {
  ScheduledRequest r;
  r.token_ids = tokens;
  r.num_computed = num_computed;
  r.block_ids = blocks;
  r.all_logits = all_logits;
  return r;
}

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
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

// A reference.safetensors file's prompts (prompt_I.input_ids and prompt_I.logits [T, V], I = 0, 1,
// ... until one is missing), as the fixture scripts write them.
struct ReferencePrompt {
  std::vector<int32_t> ids;
  std::vector<float> logits;  // [T, V]
};

inline std::vector<ReferencePrompt> reference_logits(const std::string& reference_safetensors) {
  auto file = SafetensorsFile::open(reference_safetensors);
  std::vector<ReferencePrompt> prompts;
  for (int i = 0;; ++i) {
    const std::string p = "prompt_" + std::to_string(i) + ".";
    if (!file->find(p + "input_ids")) break;
    prompts.push_back({tensor_values<int32_t>(file->tensor(*file->find(p + "input_ids"))),
                       tensor_values<float>(file->tensor(*file->find(p + "logits")))});
  }
  return prompts;
}

}  // namespace fg::test
