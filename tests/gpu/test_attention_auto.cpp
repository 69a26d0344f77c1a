// tests/gpu/test_attention_auto.cpp — the `auto` attention backend (auto_attention.h): its contract
// holds both parts', each step has exactly the bits of the backend its rule names for the step's
// bucket, and graph replays with new metadata equal fresh eager runs.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "attention/cuda/attention_backend.h"
#include "attention/cuda/auto_attention.h"
#include "core/cuda/device_info.h"
#include "core/size_buckets.h"
#include "gpu/attention_test_support.h"

namespace fg::gpu_test {
namespace {

using namespace attention_test;

TEST(AttentionAutoContract, DeclaresAlwaysAndBothParts) {
  FG_REQUIRE_GPU();
  auto a = make_attention_backend("auto", limits_for({}));
  EXPECT_EQ(a->name(), "auto");
  EXPECT_EQ(a->graph_support(), GraphSupport::kAlways);
  const PaddingContract& c = a->contract();
  EXPECT_FALSE(c.requires_uniform_query_len);
  EXPECT_EQ(c.seq_lens_fill, 0);
  std::string all;
  for (const std::string& line : c.extra_requirements) all += line + "\n";
  EXPECT_NE(all.find("non-decreasing"), std::string::npos) << all;  // flash's
  EXPECT_NE(all.find("KV split count"), std::string::npos) << all;  // split_kv's
  EXPECT_NE(a->describe().find("split_kv"), std::string::npos);
}

// Each step's output from `auto` has exactly the bits of the backend auto_attention_splits names
// for it (its request count's bucket under the capture sizes given; split_kv with the bounds
// auto_split_bounds gives that bucket), and matches the CPU. 8 KV
// heads as in Llama 3, long contexts so that split_kv's combine makes its bits differ from flash's.
TEST(AttentionAuto, RunsTheBackendItsRuleNames) {
  FG_REQUIRE_GPU();
  const Config cfg{128, 8, 4, 16};
  const int sms = cuda::current_device_sm_count();
  const int resident = attn::split_kv_attention_prepare(cfg.head_dim);
  std::mt19937 rng(41);
  struct Case {
    std::string what;
    std::vector<Req> batch;
    std::vector<int64_t> capture_sizes;  // empty: none set (powers of two)
    bool batch_invariant;
  };
  std::vector<int> many_contexts;
  for (int r = 0; r < 24; ++r) many_contexts.push_back(200 + 37 * r);
  const std::vector<Case> cases = {
      {"3 decodes", uniform_batch(1, {5000, 2100, 700}), {}, false},
      {"3 decodes, q_len 2", uniform_batch(2, {5000, 2100, 700}), {}, false},
      {"24 decodes", uniform_batch(1, many_contexts), {}, false},
      {"3 decodes in a bucket of 40", uniform_batch(1, {5000, 2100, 700}), {1, 40}, false},
      {"mixed", mixed_batch(), {}, false},
      {"3 decodes, batch-invariant", uniform_batch(1, {5000, 2100, 700}), {}, true},
  };
  int split_cases = 0, flash_cases = 0;
  for (const Case& c : cases) {
    const Step s = make_step(cfg, c.batch, rng);
    const DeviceStep d = to_device(s);
    auto a = make_attention_backend("auto", limits_for(cfg));
    if (!c.capture_sizes.empty()) a->set_capture_sizes(c.capture_sizes);
    a->set_batch_invariant(c.batch_invariant);
    const int64_t bucket = SizeBuckets(c.capture_sizes).of(s.reqs).hi;
    const bool splits = !c.batch_invariant && attn::auto_attention_splits(bucket, cfg.num_kv_heads, cfg.group,
                                                                          s.uniform_query_len, sms);
    // split_kv with the bounds auto gives this bucket (the defaults where it runs flash).
    const int64_t units =
        bucket * cfg.num_kv_heads * attn::split_kv_row_groups(std::max(s.uniform_query_len, 1), cfg.group);
    auto split = make_split_kv_attention(
        limits_for(cfg), splits ? attn::auto_split_bounds(units, sms, resident) : attn::SplitKvBounds{});
    auto flash = make_attention_backend("flash", limits_for(cfg));
    const std::vector<uint16_t> got = run_gpu(*a, s, d);
    expect_matches_cpu(s, got, run_cpu(s));
    const std::vector<uint16_t> split_out = run_gpu(*split, s, d);
    const std::vector<uint16_t> flash_out = run_gpu(*flash, s, d);
    if (s.uniform_query_len > 0)  // else split_kv itself hands the batch to flash
      ASSERT_NE(split_out, flash_out) << c.what << ": split_kv and flash agree, so this case shows nothing";
    EXPECT_EQ(got, splits ? split_out : flash_out) << c.what << ": expected " << (splits ? "split_kv" : "flash");
    ++(splits ? split_cases : flash_cases);
  }
  EXPECT_GT(split_cases, 0) << "no case ran split_kv on this GPU (" << sms << " SMs)";
  EXPECT_GT(flash_cases, 2);
}

TEST(AttentionAuto, GraphReplayWithNewMetadataEqualsFreshEagerRuns) {
  FG_REQUIRE_GPU();
  for (const Config& cfg : {Config{128, 2, 4, 16}, Config{64, 2, 8, 16}}) {
    check_replay_with_new_metadata("auto", cfg, uniform_batch(1, {900, 17, 4096, 1}),
                                   uniform_batch(1, {64, 2000, 65, 300, 20000, 129}), 16, 16);
    check_replay_with_new_metadata("auto", cfg, {{1, 900}, {120, 250}, {1, 17}, {33, 4096}},
                                   {{64, 64}, {1, 1}, {1, 2000}, {7, 130}, {1, 65}, {100, 100}}, 16, 400);
  }
}

}  // namespace
}  // namespace fg::gpu_test
