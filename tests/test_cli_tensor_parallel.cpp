// tests/test_cli_tensor_parallel.cpp — --tensor-parallel-size end to end through the `fullgraph`
// executable: generate (one prompt, greedy) and generate --prompts (the engine, as serve builds
// it) and perplexity give TP 1's results; bench latency runs; --device cuda, FP8 and sizes that do
// not divide are refused by name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "test_support.h"

namespace fg {
namespace {

using ::testing::HasSubstr;
using test::CliRun;
using test::first_line;
using test::run_fullgraph;

// Greedy tokens of one prompt: graph replays at TP 2 and TP 4 give the ids TP 1 gives.
TEST(CliTensorParallel, GenerateGivesTheGreedyTokensOfOneRank) {
  for (const char* fixture : {"tiny-llama", "tiny-qwen2"}) {
    const std::string args = "generate --model " + test::model_fixture(fixture) +
                             " --prompt-ids 3,1,4,1,5,9,2,6,5,3,5,8,9,7 --max-tokens 12 --cuda-graph-sizes 1,2,4,8";
    const CliRun one = run_fullgraph(args);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    for (const char* size : {"2", "4"}) {
      const CliRun many = run_fullgraph(args + " --tensor-parallel-size " + size);
      ASSERT_EQ(many.exit_code, 0) << many.output;
      EXPECT_EQ(first_line(many.output), first_line(one.output)) << fixture << " TP " << size;
      EXPECT_THAT(many.output, HasSubstr(std::string("tensor parallel over ") + size + " ranks"));
      EXPECT_THAT(many.output, HasSubstr("11 graph replays, 1 eager steps"));  // the 14-token prefill is eager
    }
  }
}

// The engine (continuous batching, prefix caching) over the tensor-parallel runner, as serve runs
// it: the batch's results equal TP 1's.
TEST(CliTensorParallel, EngineBatchGivesTheTokensOfOneRank) {
  const std::string prompts = (std::filesystem::temp_directory_path() / "fg_tp_prompts.jsonl").string();
  {
    std::ofstream out(prompts);
    out << R"({"prompt_ids": [1, 2, 3, 4, 5], "max_tokens": 8})" << "\n"
        << R"({"prompt_ids": [9, 8, 7], "max_tokens": 6, "temperature": 0.8, "seed": 11})" << "\n"
        << R"({"prompt_ids": [1, 2, 3, 4, 6, 7], "max_tokens": 5})" << "\n";
  }
  const std::string args = "generate --model " + test::model_fixture("tiny-llama3-rope") + " --prompts " + prompts +
                           " --cuda-graph-sizes 1,2,4,8 --kv-cache-blocks 64 --no-progress";
  const CliRun one = run_fullgraph(args);
  const CliRun two = run_fullgraph(args + " --tensor-parallel-size 2");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  ASSERT_EQ(two.exit_code, 0) << two.output;
  const auto results = [](const std::string& output) {
    std::string lines;
    for (size_t at = 0; (at = output.find("{\"cached_tokens\"", at)) != std::string::npos; ++at)
      lines += output.substr(at, output.find('\n', at) - at) + "\n";
    return lines;
  };
  EXPECT_EQ(results(two.output), results(one.output));
  EXPECT_THAT(results(one.output), HasSubstr("\"index\":2"));
  std::filesystem::remove(prompts);
}

// Prompt logprobs (perplexity) run on every rank too: TP 2's chunk NLLs are TP 1's within float noise.
TEST(CliTensorParallel, PerplexityMatchesOneRank) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string ids = (dir / "fg_tp_ids.txt").string();
  {
    std::ofstream out(ids);
    for (int i = 0; i < 70; ++i) out << (i * 37 + 11) % 500 << (i + 1 < 70 ? ", " : "\n");
  }
  const auto nll = [&](const std::string& extra) {
    const std::string json = (dir / ("fg_tp_ppl" + extra.substr(extra.size() - 1) + ".json")).string();
    const CliRun r = run_fullgraph("perplexity --model " + test::model_fixture("tiny-llama") + " --token-ids " + ids +
                                   " --context 33 --max-num-batched-tokens 16 --max-num-seqs 2 --json " + json + extra);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::ifstream in(json);
    const nlohmann::json out = nlohmann::json::parse(in);
    std::filesystem::remove(json);
    return out["nll_mean"].get<double>();
  };
  const double one = nll(" --tensor-parallel-size 1"), two = nll(" --tensor-parallel-size 2");
  EXPECT_NEAR(two, one, 1e-5 * std::abs(one));
  std::filesystem::remove(ids);
}

TEST(CliTensorParallel, BenchLatencyRunsOverRanks) {
  const CliRun r = run_fullgraph("bench latency --model " + test::model_fixture("tiny-llama") +
                                 " --tensor-parallel-size 2 --batch-sizes 1,2 --context 20 --prefill-chunk 8 --steps 2 "
                                 "--warmup 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cpu x2 ranks backend"));
  EXPECT_THAT(r.output, HasSubstr("decode"));
}

TEST(CliTensorParallel, UnsupportedCombinationsAreRefusedByName) {
  const std::string model = " --model " + test::model_fixture("tiny-llama");
  const CliRun cuda = run_fullgraph("generate" + model + " --device cuda --tensor-parallel-size 2 --prompt-ids 1");
  EXPECT_NE(cuda.exit_code, 0);
  EXPECT_THAT(cuda.output, HasSubstr("NCCL communicator is not built yet"));
  const CliRun three = run_fullgraph("generate" + model + " --tensor-parallel-size 3 --prompt-ids 1");
  EXPECT_NE(three.exit_code, 0);
  EXPECT_THAT(three.output, HasSubstr("--tensor-parallel-size 3: the model's num_attention_heads = 4 is not divisible"));
  const CliRun fp8 = run_fullgraph("generate" + model + " --quantization fp8 --tensor-parallel-size 2 --prompt-ids 1");
  EXPECT_NE(fp8.exit_code, 0);
  EXPECT_THAT(fp8.output, HasSubstr("FP8 models are not sharded yet"));
  const CliRun bench = run_fullgraph("bench latency --device cuda --tensor-parallel-size 2" + model);
  EXPECT_NE(bench.exit_code, 0);
  EXPECT_THAT(bench.output, HasSubstr("NCCL communicator is not built yet"));
}

}  // namespace
}  // namespace fg
