// tests/gpu/test_attention_split_kv.cpp — the `split_kv` attention backend against the CPU backend's
// fp32 attention (attention_test_support.h): decode contexts, uniform query lengths up to four,
// larger blocks, the padding contract, graph replays, batch independence (also when CTAs walk
// several units), the bounds `auto` picks, the step's rows read after the kernel before; and its
// contract and the bounds it refuses.
#include <random>
#include <string>
#include <vector>

#include "attention/cuda/attention_backend.h"
#include "attention/cuda/auto_attention.h"
#include "gpu/attention_test_support.h"

namespace fg::gpu_test {
namespace {

using namespace attention_test;

TEST(AttentionSplitKvContract, DeclaresUniformDecode) {
  FG_REQUIRE_GPU();
  auto split = make_attention_backend("split_kv", limits_for({}));
  EXPECT_EQ(split->name(), "split_kv");
  EXPECT_EQ(split->graph_support(), GraphSupport::kUniformDecode);
  const PaddingContract& c = split->contract();
  EXPECT_FALSE(c.requires_uniform_query_len);  // mixed batches run through its flash fallback
  EXPECT_EQ(c.seq_lens_fill, 0);
  EXPECT_FALSE(c.extra_requirements.empty());
  EXPECT_FALSE(split->describe().empty());
}

TEST(AttentionSplitKv, DecodeContextsMatchCpu) {
  FG_REQUIRE_GPU();
  expect_backend_matches_cpu_over("split_kv", all_configs(), uniform_batch(1, kDecodeContexts), 21);
}

TEST(AttentionSplitKv, UniformQueryLengthsUpToFourMatchCpu) {
  FG_REQUIRE_GPU();
  std::mt19937 rng(22);
  for (const Config& cfg : all_configs())
    for (int query_len : {2, 3, 4}) {
      const Step s = make_step(cfg, uniform_batch(query_len, {4, 15, 16, 17, 63, 64, 65, 129, 300, 1000, 4096, 9000}),
                               rng);
      expect_backend_matches_cpu("split_kv", cfg, s);
    }
}

TEST(AttentionSplitKv, LargerBlockSizesMatchCpu) {
  FG_REQUIRE_GPU();
  expect_backend_matches_cpu_over("split_kv", larger_block_configs(), uniform_batch(1, kDecodeContexts), 23);
}

TEST(AttentionSplitKv, PaddedBatchWritesOnlyOwnedRows) {
  FG_REQUIRE_GPU();
  std::mt19937 rng(24);
  for (const Config& cfg : all_configs()) {
    // 5 real decodes padded to 8 requests and 8 rows: 3 padded requests, 3 unowned rows.
    const Step s = make_step(cfg, uniform_batch(1, {1, 17, 300, 4096, 20000}), rng, 8, 8);
    auto backend = make_attention_backend("split_kv", limits_for(cfg));  // one backend for both steps
    expect_matches_cpu(s, run_gpu(*backend, s, to_device(s)), run_cpu(s));
    // q_len 2: 4 real requests padded to 8 (rows 8..15 unowned).
    const Step s2 = make_step(cfg, uniform_batch(2, {2, 129, 1000, 5000}), rng, 8, 16);
    expect_matches_cpu(s2, run_gpu(*backend, s2, to_device(s2)), run_cpu(s2));
  }
}

TEST(AttentionSplitKv, GraphReplayWithNewMetadataEqualsFreshEagerRuns) {
  FG_REQUIRE_GPU();
  for (const Config& cfg : {Config{128, 2, 4, 16}, Config{64, 2, 8, 16}, Config{128, 2, 1, 16}}) {
    check_replay_with_new_metadata("split_kv", cfg, uniform_batch(1, {900, 17, 4096, 1}),
                                   uniform_batch(1, {64, 2000, 65, 300, 20000, 129}), 16, 16);
  }
}

TEST(AttentionSplitKv, DeterministicAndBatchIndependent) {
  FG_REQUIRE_GPU();
  for (const Config& cfg : {Config{128, 2, 4, 16}, Config{64, 2, 8, 16}, Config{128, 2, 1, 16}}) {
    for (int context : {1, 300, 3000, 20000})
      check_batch_independence("split_kv", cfg, uniform_batch(1, {300, 700, 64, 5000}), {1, context}, 12, 12);
  }
}

// The grid holds at most the GPU's resident CTAs, each walking every grid-th unit (split, request,
// row group). 40 and 48 requests with contexts up to 20000 (32 splits) give far more units than
// CTAs, so most CTAs walk several, of different requests: the probe's bits must not change.
TEST(AttentionSplitKv, CtasWalkingSeveralUnitsKeepTheBits) {
  FG_REQUIRE_GPU();
  std::vector<int> contexts;
  for (int i = 0; i < 39; ++i) contexts.push_back(std::vector<int>{300, 20000, 64, 5000, 12000}[i % 5]);
  for (const Config& cfg : {Config{128, 2, 4, 16}, Config{64, 2, 8, 16}}) {
    check_batch_independence("split_kv", cfg, uniform_batch(1, contexts), {1, 20000}, 40, 40);
    check_batch_independence("split_kv", cfg, uniform_batch(1, contexts), {1, 7000}, 48, 48);
  }
}

std::string bounds_label(const attn::SplitKvBounds& b) {
  return "split_kv bounds (" + std::to_string(b.min_chunk) + ", " + std::to_string(b.max_splits) + ", " +
         std::to_string(b.tile_splits) + ")";
}

// The bounds `auto` gives batches of 1, 2, 4 and 8 requests on the H200 at hd 128 (and 2, 4, 8 at
// hd 64: auto_attention.h), and short chunks without tile splits: every context, every head
// layout, against the CPU; requests stay independent of their batch; and the bounds reach the
// kernel (a 1000-position context takes 16 one-tile splits under the first bounds, 4 under the
// defaults, so the bits differ).
TEST(AttentionSplitKv, OtherBoundsMatchCpuAndKeepRequestsIndependent) {
  FG_REQUIRE_GPU();
  std::mt19937 rng(25);
  const std::vector<attn::SplitKvBounds> all_bounds = {
      {256, 32, 16}, {256, 16, 8}, {256, 8, 4}, {256, 4, 2}, {256, 32, 8}, {256, 16, 4}, {256, 8, 2}, {64, 8, 0}};
  for (const attn::SplitKvBounds& bounds : all_bounds) {
    SCOPED_TRACE(bounds_label(bounds));
    for (const Config& cfg : all_configs()) {
      const Step s = make_step(cfg, uniform_batch(1, kDecodeContexts), rng);
      auto backend = make_split_kv_attention(limits_for(cfg), bounds);
      expect_matches_cpu(s, run_gpu(*backend, s, to_device(s)), run_cpu(s));
    }
    const Config cfg{128, 2, 4, 16};
    auto backend = make_split_kv_attention(limits_for(cfg), bounds);
    for (int context : {300, 20000})
      check_batch_independence(*backend, bounds_label(bounds), cfg, uniform_batch(1, {300, 700, 64, 5000}),
                               {1, context}, 12, 12);
  }
  const Config cfg{128, 2, 4, 16};
  const Step s = make_step(cfg, uniform_batch(1, {1000}), rng);
  const DeviceStep d = to_device(s);
  auto tiles = make_split_kv_attention(limits_for(cfg), all_bounds[0]);
  auto defaults = make_split_kv_attention(limits_for(cfg));
  EXPECT_NE(run_gpu(*tiles, s, d), run_gpu(*defaults, s, d)) << "the bounds did not change the splits";
}

TEST(AttentionSplitKvContract, RefusesBoundsOutsideThePolicy) {
  FG_REQUIRE_GPU();
  for (const attn::SplitKvBounds& bad : std::vector<attn::SplitKvBounds>{
           {100, 32, 0}, {0, 32, 0}, {256, 0, 0}, {256, 33, 0}, {256, 8, 9}, {256, 8, -1}}) {
    EXPECT_THROW(make_split_kv_attention(limits_for({}), bad), Error) << bounds_label(bad);
  }
}

TEST(AttentionSplitKv, ReadsTheStepsRowsOnlyAfterTheKernelBefore) {
  FG_REQUIRE_GPU();
  for (const Config& cfg : {Config{128, 2, 4, 16}, Config{64, 2, 8, 16}}) {
    // Contexts whose step rows fall in a split's first two tiles (requested before the wait) and
    // in later ones.
    check_step_rows_read_after_the_wait("split_kv", cfg, uniform_batch(1, kDecodeContexts));
    check_step_rows_read_after_the_wait("split_kv", cfg, uniform_batch(3, {3, 64, 65, 127, 300, 1000, 4096}));
  }
}

}  // namespace
}  // namespace fg::gpu_test
