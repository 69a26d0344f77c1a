// tests/gpu/test_attention_flash.cpp — the `flash` attention backend against the CPU backend's fp32
// attention (attention_test_support.h): mixed prefill and decode batches, decode contexts, larger
// blocks, the padding contract (padded requests write nothing; the seed's -1 padding of
// query_start_loc breaks it), graph replays, batch independence, the step's rows read after the
// kernel before; and the contract and refusals of `flash` and `split_kv` at construction.
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "attention/cuda/attention_backend.h"
#include "gpu/attention_test_support.h"

namespace fg::gpu_test {
namespace {

using namespace attention_test;

TEST(AttentionFlashContract, DeclaresAlwaysAndNonDecreasingOffsets) {
  FG_REQUIRE_GPU();
  auto flash = make_attention_backend("flash", limits_for({}));
  EXPECT_EQ(flash->name(), "flash");
  EXPECT_EQ(flash->graph_support(), GraphSupport::kAlways);
  const PaddingContract& c = flash->contract();
  EXPECT_FALSE(c.requires_uniform_query_len);
  EXPECT_EQ(c.seq_lens_fill, 0);
  EXPECT_EQ(c.block_table_fill, 0);
  EXPECT_EQ(c.slot_mapping_fill, -1);
  ASSERT_FALSE(c.extra_requirements.empty());
  EXPECT_NE(c.extra_requirements[0].find("non-decreasing"), std::string::npos);
  EXPECT_FALSE(flash->describe().empty());
}

TEST(AttentionFlashContract, RefusesUnsupportedShapesAtConstruction) {
  FG_REQUIRE_GPU();
  for (const char* name : {"flash", "split_kv"}) {
    AttentionLimits l = limits_for({});
    l.head_dim = 96;
    EXPECT_THROW(make_attention_backend(name, l), Error) << name << " head_dim 96";
    for (int block : {8, 24, 0}) {
      l = limits_for({});
      l.block_size = block;
      EXPECT_THROW(make_attention_backend(name, l), Error) << name << " block size " << block;
    }
    l = limits_for({});
    l.num_heads = 6;
    l.num_kv_heads = 4;
    EXPECT_THROW(make_attention_backend(name, l), Error) << name << " 6 heads over 4 KV heads";
  }
  EXPECT_THROW(make_attention_backend("no_such_backend", limits_for({})), Error);
}

TEST(AttentionFlash, MixedPrefillAndDecodeMatchCpu) {
  FG_REQUIRE_GPU();
  expect_backend_matches_cpu_over("flash", all_configs(), mixed_batch(), 1);
}

TEST(AttentionFlash, DecodeContextsMatchCpu) {
  FG_REQUIRE_GPU();
  expect_backend_matches_cpu_over("flash", all_configs(), uniform_batch(1, kDecodeContexts), 2);
}

TEST(AttentionFlash, LargerBlockSizesMatchCpu) {
  FG_REQUIRE_GPU();
  expect_backend_matches_cpu_over("flash", larger_block_configs(), mixed_batch(), 3);
}

TEST(AttentionFlash, PaddedBatchWritesOnlyOwnedRows) {
  FG_REQUIRE_GPU();
  // 6 real requests padded to 16; 70 extra query rows owned by nobody.
  expect_backend_matches_cpu_over("flash", all_configs(), {{1, 100}, {37, 37}, {1, 4096}, {130, 300}, {1, 1}, {3, 65}},
                                  4, 16, 173 + 70);
}

// The seed's bug: query_start_loc padded with -1 instead of its last value. flash ranks work tiles
// against prefix sums of the offsets, so the drop makes real tiles go uncomputed: the real rows
// differ from the contract-padded run (they keep their poison). The contract is what makes the
// padded graph correct, not luck.
TEST(AttentionFlash, MinusOnePaddingOfQueryStartLocBreaksRealRows) {
  FG_REQUIRE_GPU();
  std::mt19937 rng(5);
  const Config cfg{128, 2, 4, 16};
  const Step good = make_step(cfg, {{300, 300}, {1, 500}, {200, 900}, {1, 70}, {19, 19}}, rng, 12, 600);
  Step bad = good;
  for (int r = good.reqs_real + 1; r <= good.reqs; ++r) bad.qsl[r] = -1;

  auto backend = make_attention_backend("flash", limits_for(cfg));
  const std::vector<uint16_t> good_out = run_gpu(*backend, good, to_device(good));
  expect_matches_cpu(good, good_out, run_cpu(good));
  const std::vector<uint16_t> bad_out = run_gpu(*backend, bad, to_device(bad));

  size_t differing = 0, still_poison = 0;
  const size_t w = cfg.width();
  for (int r = 0; r < good.reqs_real; ++r) {
    differing += differing_elements(good, good_out, r, bad, bad_out, r);
    for (size_t e = good.qsl[r] * w; e < good.qsl[r + 1] * w; ++e) still_poison += bad_out[e] == kPoisonBits;
  }
  EXPECT_GT(differing, 0u) << "-1 padding of query_start_loc left every real row intact: the contract test "
                              "no longer demonstrates anything";
  EXPECT_EQ(still_poison, differing) << "the rows the -1 padding broke should be exactly the unwritten ones";
  std::cout << "[          ] -1 padding: " << differing << " of " << good.qsl[good.reqs_real] * w
            << " real output elements unwritten\n";
}

TEST(AttentionFlash, GraphReplayWithNewMetadataEqualsFreshEagerRuns) {
  FG_REQUIRE_GPU();
  for (const Config& cfg : {Config{128, 2, 4, 16}, Config{64, 2, 8, 16}, Config{128, 2, 1, 16}}) {
    check_replay_with_new_metadata("flash", cfg, {{1, 900}, {120, 250}, {1, 17}, {33, 4096}},
                                   {{64, 64}, {1, 1}, {1, 2000}, {7, 130}, {1, 65}, {100, 100}}, 16, 400);
  }
}

TEST(AttentionFlash, DeterministicAndBatchIndependent) {
  FG_REQUIRE_GPU();
  for (const Config& cfg : {Config{128, 2, 4, 16}, Config{64, 2, 8, 16}, Config{128, 2, 1, 16}}) {
    // A decode row, and a prefill chunk, alone and amid a padded mixed batch.
    check_batch_independence("flash", cfg, {{1, 300}, {70, 700}, {1, 64}, {1, 5000}}, {1, 3000}, 12, 200);
    check_batch_independence("flash", cfg, {{1, 300}, {70, 700}, {1, 64}, {1, 5000}}, {90, 1090}, 12, 260);
  }
}

TEST(AttentionFlash, ReadsTheStepsRowsOnlyAfterTheKernelBefore) {
  FG_REQUIRE_GPU();
  for (const Config& cfg : {Config{128, 2, 4, 16}, Config{64, 2, 8, 16}}) {
    check_step_rows_read_after_the_wait("flash", cfg, uniform_batch(1, kDecodeContexts));
    check_step_rows_read_after_the_wait("flash", cfg, mixed_batch());
  }
}

// flash decode rows are batch-independent too, for every decode context (same KV, same q).
TEST(AttentionFlash, DecodeRowsBatchIndependentAcrossContexts) {
  FG_REQUIRE_GPU();
  const Config cfg{128, 2, 4, 16};
  for (int context : {1, 64, 65, 4096})
    check_batch_independence("flash", cfg, uniform_batch(1, {300, 700, 64, 5000}), {1, context}, 12, 12);
}

}  // namespace
}  // namespace fg::gpu_test
