// tests/gpu/test_attention_fp8_kv.cpp — the attention backends over an e4m3 KV cache
// (--kv-cache-dtype fp8) against the CPU backend's FP8 cache path (attention_test_support.h: both
// sides read the same e4m3 bytes, e4m3 * scale), with scales of 1 (vLLM's default) and with scales
// that are not powers of two; the padding contract, graph replays equal to unpadded eager runs bit
// for bit, batch independence, and the step's own rows read only after the kernel that writes them.
#include <random>
#include <vector>

#include "attention/cuda/attention_backend.h"
#include "gpu/attention_test_support.h"

namespace fg::gpu_test {
namespace {

using namespace attention_test;

Config fp8(Config c, float k_scale = 1.0f, float v_scale = 1.0f) {
  c.fp8_kv = true;
  c.k_scale = k_scale;
  c.v_scale = v_scale;
  return c;
}

// Every head layout of all_configs(), at scales 1 and at scales that change every value's rounding.
std::vector<Config> fp8_configs() {
  std::vector<Config> configs;
  for (const Config& c : all_configs()) {
    configs.push_back(fp8(c));
    configs.push_back(fp8(c, 0.37f, 2.5f));
  }
  return configs;
}

TEST(AttentionFp8Kv, FlashMixedPrefillAndDecodeMatchCpu) {
  FG_REQUIRE_GPU();
  expect_backend_matches_cpu_over("flash", fp8_configs(), mixed_batch(), 41);
}

TEST(AttentionFp8Kv, FlashPaddedBatchWritesOnlyOwnedRows) {
  FG_REQUIRE_GPU();
  expect_backend_matches_cpu_over("flash", fp8_configs(), {{1, 100}, {37, 37}, {1, 4096}, {130, 300}, {1, 1}, {3, 65}},
                                  42, 16, 173 + 70);
}

TEST(AttentionFp8Kv, SplitKvDecodeContextsMatchCpu) {
  FG_REQUIRE_GPU();
  expect_backend_matches_cpu_over("split_kv", fp8_configs(), uniform_batch(1, kDecodeContexts), 43);
  expect_backend_matches_cpu_over("split_kv", fp8_configs(), uniform_batch(3, {3, 17, 64, 65, 1000, 9000}), 44, 8, 24);
}

TEST(AttentionFp8Kv, ReferenceMatchesCpu) {
  FG_REQUIRE_GPU();
  expect_backend_matches_cpu_over("reference", fp8_configs(), mixed_batch(), 45);
}

TEST(AttentionFp8Kv, GraphReplayWithNewMetadataEqualsFreshEagerRuns) {
  FG_REQUIRE_GPU();
  for (const Config& cfg : {fp8(Config{128, 2, 4, 16}, 0.37f, 2.5f), fp8(Config{64, 2, 8, 16})}) {
    check_replay_with_new_metadata("flash", cfg, {{1, 900}, {120, 250}, {1, 17}, {33, 4096}},
                                   {{64, 64}, {1, 1}, {1, 2000}, {7, 130}, {1, 65}, {100, 100}}, 16, 400);
    check_replay_with_new_metadata("split_kv", cfg, uniform_batch(1, {900, 17, 4096, 1}),
                                   uniform_batch(1, {64, 2000, 65, 300, 20000, 129}), 16, 16);
  }
}

TEST(AttentionFp8Kv, DeterministicAndBatchIndependent) {
  FG_REQUIRE_GPU();
  for (const Config& cfg : {fp8(Config{128, 2, 4, 16}, 0.37f, 2.5f), fp8(Config{64, 2, 8, 16})}) {
    check_batch_independence("flash", cfg, {{1, 300}, {70, 700}, {1, 64}, {1, 5000}}, {90, 1090}, 12, 260);
    for (int context : {1, 3000, 20000})
      check_batch_independence("split_kv", cfg, uniform_batch(1, {300, 700, 64, 5000}), {1, context}, 12, 12);
  }
}

TEST(AttentionFp8Kv, ReadsTheStepsRowsOnlyAfterTheKernelBefore) {
  FG_REQUIRE_GPU();
  for (const Config& cfg : {fp8(Config{128, 2, 4, 16}), fp8(Config{64, 2, 8, 16}, 0.37f, 2.5f)}) {
    check_step_rows_read_after_the_wait("flash", cfg, uniform_batch(1, kDecodeContexts));
    check_step_rows_read_after_the_wait("flash", cfg, mixed_batch());
    check_step_rows_read_after_the_wait("split_kv", cfg, uniform_batch(1, kDecodeContexts));
  }
}

}  // namespace
}  // namespace fg::gpu_test
