// tests/test_padding_contract.cpp — the seed's failure reproduced and prevented on the CPU
// backend: wrong fills of the padded region (query_start_loc = -1, slots of real tokens, garbage
// block ids and lengths) either corrupt the real requests or trip the CPU oracle's own checks, and
// checked mode rejects each before the replay, naming field, index, value and expected value.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "model/model_loader.h"
#include "runner_test_support.h"
#include "test_support.h"

namespace fg {
namespace {

using ::testing::HasSubstr;
using test::BlockPool;
using test::TestRequest;

constexpr int64_t kBlockSize = 16;

// A tiny-qwen3 runner whose decode buckets are {4, 8}: a batch of 3 decodes is padded by one
// request and one token.
struct PaddedDecodeScenario {
  explicit PaddedDecodeScenario(bool checked) {
    LoadOptions load;
    loaded = load_model(test::model_fixture("tiny-qwen3"), load, backend);
    RunnerOptions options;
    options.max_num_tokens = 64;
    options.max_num_seqs = 8;
    options.capture_sizes = {4, 8};
    options.check_graph_inputs = checked;
    model = std::make_unique<LlamaModel>(loaded.config, loaded.weights, backend, 64, 8);
    kv = allocate_kv_cache(backend, loaded.config, 64, kBlockSize, DType::kF32);
    test::poison_kv_cache(backend, kv);
    runner = std::make_unique<ModelRunner>(*model, kv, options, [](const std::string&) {});
    runner->capture_graphs();
    std::mt19937 rng(5);
    for (int i = 0; i < 3; ++i) {
      TestRequest r;
      for (int t = 0; t < 20 + 7 * i; ++t) r.tokens.push_back(static_cast<int32_t>(rng() % 320));
      r.tokens.push_back(7);
      runner->execute_eager({r.chunk(static_cast<int64_t>(r.tokens.size()) - 1, pool, kBlockSize)});
      r.computed = static_cast<int64_t>(r.tokens.size()) - 1;
      requests.push_back(r);
    }
  }
  std::vector<ScheduledRequest> decode_step() {
    std::vector<ScheduledRequest> chunks;
    for (TestRequest& r : requests) chunks.push_back(r.chunk(1, pool, kBlockSize));
    return chunks;
  }
  // Runs the padded decode step, then one more decode of every request (which reads the KV the
  // first step wrote); returns the second step's logits.
  std::vector<float> two_steps() {
    StepResult first = runner->execute(decode_step());
    EXPECT_TRUE(first.replayed);
    EXPECT_EQ(first.bucket.num_reqs, 4);
    for (size_t i = 0; i < requests.size(); ++i) {
      ++requests[i].computed;
      requests[i].tokens.push_back(first.sampled[i]);
    }
    runner->execute(decode_step());
    return test::copy_logits(*model, 3);
  }

  CpuBackend backend;
  LoadedModel loaded;
  std::unique_ptr<LlamaModel> model;
  KvCache kv;
  BlockPool pool{64};
  std::unique_ptr<ModelRunner> runner;
  std::vector<TestRequest> requests;
};


using test::error_of;

TEST(PaddingContract, ContractFillGivesTheUnpaddedEagerResult) {
  PaddedDecodeScenario padded(false), eager(false);
  StepResult a = padded.runner->execute(padded.decode_step());
  const auto graph_logits = test::copy_logits(*padded.model, 3);
  StepResult b = eager.runner->execute_eager(eager.decode_step());
  EXPECT_TRUE(a.replayed);
  EXPECT_TRUE(test::bitwise_equal(graph_logits, test::copy_logits(*eager.model, 3)));
  EXPECT_EQ(a.sampled, b.sampled);
}

// The seed: query_start_loc padded with -1 breaks the non-decreasing offsets attention needs.
TEST(PaddingContract, QueryStartLocMinusOneIsCaughtByTheKernelAndByCheckedMode) {
  const auto minus_one = [](const StepLayout& layout, void* base) {
    int32_t* qsl = layout.at<int32_t>(base, StepField::kQueryStartLoc);
    qsl[4] = -1;  // 3 real requests: entry 4 is the padded request's end offset
  };
  PaddedDecodeScenario unchecked(false);
  unchecked.runner->set_staging_hook(minus_one);
  EXPECT_THAT(error_of([&] { unchecked.runner->execute(unchecked.decode_step()); }),
              HasSubstr("query_start_loc[4] = -1 must be non-decreasing"));

  PaddedDecodeScenario checked(true);
  checked.runner->set_staging_hook(minus_one);
  EXPECT_THAT(error_of([&] { checked.runner->execute(checked.decode_step()); }),
              HasSubstr("checked mode: query_start_loc[4] = -1, expected 3"));
}

// A padded token whose slot is a real token's slot overwrites that token's cached K and V: the
// next step of the real request reads them and its logits change.
TEST(PaddingContract, SlotMappingOfARealTokenCorruptsTheCacheAndCheckedModeRejectsIt) {
  const auto steal_slot = [](const StepLayout& layout, void* base) {
    int64_t* slots = layout.at<int64_t>(base, StepField::kSlotMapping);
    slots[3] = slots[0] - 5;  // a slot request 0 filled during its prefill
  };
  PaddedDecodeScenario good(false), bad(false);
  bad.runner->set_staging_hook(steal_slot);
  const auto want = good.two_steps();
  const auto got = bad.two_steps();
  EXPECT_FALSE(test::bitwise_equal(want, got)) << "the stolen slot should have changed request 0's next logits";

  PaddedDecodeScenario checked(true);
  checked.runner->set_staging_hook(steal_slot);
  EXPECT_THAT(error_of([&] { checked.runner->execute(checked.decode_step()); }),
              HasSubstr("checked mode: slot_mapping[3] ="));
}

// A padded request given a context (seq_lens) and garbage block ids makes attention walk blocks
// that are not its own: the CPU oracle refuses the ids, checked mode refuses both fills.
TEST(PaddingContract, SeqLensAndBlockTableFillsAreEnforced) {
  const auto garbage = [](const StepLayout& layout, void* base) {
    layout.at<int32_t>(base, StepField::kSeqLens)[3] = 17;
    int32_t* row = layout.at<int32_t>(base, StepField::kBlockTable) + 3 * layout.max_blocks_per_seq;
    row[0] = -1;
    row[1] = 100000;
  };
  PaddedDecodeScenario unchecked(false);
  unchecked.runner->set_staging_hook(garbage);
  EXPECT_THAT(error_of([&] { unchecked.runner->execute(unchecked.decode_step()); }),
              HasSubstr("block_table[3][0] = -1 is outside"));

  PaddedDecodeScenario checked_lens(true);
  checked_lens.runner->set_staging_hook(garbage);
  EXPECT_THAT(error_of([&] { checked_lens.runner->execute(checked_lens.decode_step()); }),
              HasSubstr("checked mode: seq_lens[3] = 17, expected 0"));

  PaddedDecodeScenario checked_table(true);
  checked_table.runner->set_staging_hook([](const StepLayout& layout, void* base) {
    layout.at<int32_t>(base, StepField::kBlockTable)[3 * layout.max_blocks_per_seq + 2] = 9;
  });
  EXPECT_THAT(error_of([&] { checked_table.runner->execute(checked_table.decode_step()); }),
              HasSubstr("checked mode: block_table["));
}

TEST(PaddingContract, CheckedModeAcceptsContractPaddedSteps) {
  PaddedDecodeScenario checked(true), plain(false);
  EXPECT_TRUE(test::bitwise_equal(checked.two_steps(), plain.two_steps()));
}

}  // namespace
}  // namespace fg
