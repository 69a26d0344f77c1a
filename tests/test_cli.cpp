// tests/test_cli.cpp — the `fullgraph` executable end to end: the built-in default model, a
// fixture model with --dump-logits compared to the transformers reference, and bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
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

using test::CliRun;
using test::first_line;
using test::run_fullgraph;

TEST(Cli, BuiltInDefaultModelGeneratesDeterministically) {
  CliRun a = run_fullgraph("generate --prompt-ids 1,2,3 --max-tokens 8");
  CliRun b = run_fullgraph("generate --prompt-ids 1,2,3 --max-tokens 8");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const std::string ids = first_line(a.output);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), ','), 7) << ids;
  EXPECT_EQ(ids, first_line(b.output));
  EXPECT_THAT(a.output, HasSubstr("built-in default"));
}

TEST(Cli, DumpLogitsMatchesTheTransformersReference) {
  const std::string model = test::model_fixture("tiny-qwen3");
  auto ref = SafetensorsFile::open(model + "/reference.safetensors");
  const auto ids = test::tensor_values<int32_t>(ref->tensor(*ref->find("prompt_2.input_ids")));
  const auto logits = test::tensor_values<float>(ref->tensor(*ref->find("prompt_2.logits")));
  const auto greedy = test::tensor_values<int32_t>(ref->tensor(*ref->find("prompt_2.greedy")));
  std::string csv;
  for (int32_t id : ids) {
    if (!csv.empty()) csv += ',';
    csv += std::to_string(id);
  }
  const std::string dump = (std::filesystem::temp_directory_path() / "fg_cli_dump.safetensors").string();

  CliRun r = run_fullgraph("generate --model " + model + " --prompt-ids " + csv +
                        " --max-tokens 16 --rope-inv-freq-bf16 --dump-logits " + dump);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto out = SafetensorsFile::open(dump);
  const auto got_logits = test::tensor_values<float>(out->tensor(*out->find("prompt_logits")));
  const auto got_ids = test::tensor_values<int32_t>(out->tensor(*out->find("generated_ids")));
  EXPECT_LE(test::max_abs_diff(got_logits, logits), 1e-4f * test::max_abs(logits));  // as in ModelReference
  EXPECT_EQ(got_ids, greedy);
  EXPECT_EQ(out->find("generated_logits")->shape, (std::vector<int64_t>{16, 320}));
  std::filesystem::remove(dump);
}

// The full-graph path (default), the eager path and the all-logits path agree token for token;
// checked mode accepts the steps; the prompt is prefilled in chunks when it exceeds the budget.
TEST(Cli, GraphEagerAndCheckedGenerationAgree) {
  const std::string model = " --model " + test::model_fixture("tiny-llama3-rope");
  const std::string args = "generate" + model + " --prompt-ids 3,1,4,1,5,9,2,6,5,3,5,8,9,7 --max-tokens 12";
  CliRun graph = run_fullgraph(args);
  CliRun eager = run_fullgraph(args + " --enforce-eager");
  CliRun checked = run_fullgraph(args + " --check-graph-inputs --max-num-batched-tokens 5 --cuda-graph-sizes 1,2,4");
  const std::string dump = (std::filesystem::temp_directory_path() / "fg_cli_agree.safetensors").string();
  CliRun logits = run_fullgraph(args + " --dump-logits " + dump);
  ASSERT_EQ(graph.exit_code, 0) << graph.output;
  ASSERT_EQ(eager.exit_code, 0) << eager.output;
  ASSERT_EQ(checked.exit_code, 0) << checked.output;
  ASSERT_EQ(logits.exit_code, 0) << logits.output;
  EXPECT_THAT(graph.output, HasSubstr("graph replays"));
  EXPECT_THAT(eager.output, HasSubstr("0 graph replays"));
  EXPECT_EQ(first_line(graph.output), first_line(eager.output));
  EXPECT_EQ(first_line(graph.output), first_line(checked.output));
  EXPECT_EQ(first_line(graph.output), first_line(logits.output));
  std::filesystem::remove(dump);
}

// Text in, text out through the CLI: the e2e fixture (tokenizer files copied in, as the fixture
// README says) prints exactly transformers' greedy text, streamed; the built-in model has a
// tokenizer and a chat template, so text prompts run with nothing downloaded.
TEST(Cli, TextPromptsStreamTheGoldenText) {
  namespace fs = std::filesystem;
  const std::string data = test::testdata_dir();
  const fs::path dir = fs::temp_directory_path() / ("fg_cli_e2e_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors"})
    fs::create_symlink(fs::absolute(data + "/e2e/tiny-qwen3tok/" + f), dir / f);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(data + "/tokenizers/qwen3/" + f, dir / f);
  std::ifstream golden(data + "/e2e/tiny-qwen3tok/e2e_golden.jsonl");
  std::string first, second;
  std::getline(golden, first);
  std::getline(golden, second);
  const auto prompt_line = nlohmann::json::parse(first), chat_line = nlohmann::json::parse(second);

  CliRun text = run_fullgraph("generate --model " + dir.string() + " --prompt Hello --max-tokens 12 --rope-inv-freq-bf16");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_EQ(first_line(text.output), prompt_line["output_text"].get<std::string>());

  const auto& msgs = chat_line["chat"];
  CliRun chat = run_fullgraph("generate --model " + dir.string() + " --chat --system '" +
                              msgs[0]["content"].get<std::string>() + "' --user '" +
                              msgs[1]["content"].get<std::string>() + "' --max-tokens 12 --rope-inv-freq-bf16");
  ASSERT_EQ(chat.exit_code, 0) << chat.output;
  EXPECT_EQ(first_line(chat.output), chat_line["output_text"].get<std::string>());
  fs::remove_all(dir);

  CliRun builtin = run_fullgraph("generate --prompt Hello --max-tokens 8");
  EXPECT_EQ(builtin.exit_code, 0) << builtin.output;
  CliRun builtin_chat = run_fullgraph("generate --chat --user Hi --max-tokens 4");
  EXPECT_EQ(builtin_chat.exit_code, 0) << builtin_chat.output;
  CliRun both = run_fullgraph("generate --prompt Hello --prompt-ids 1");
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_THAT(both.output, HasSubstr("exactly one of --prompt-ids, --prompt and --chat"));
}

TEST(Cli, DummyLoadFormatNeedsNoWeights) {
  CliRun r = run_fullgraph("generate --model " + test::model_fixture("tiny-llama3-rope") +
                        " --load-format dummy --prompt-ids 5,6 --max-tokens 3");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// --quantization fp8: the built-in model's linears quantized at load (the log says so), and the
// same graph == eager agreement; an FP8 checkpoint needs no flag and refuses it.
TEST(Cli, QuantizationFp8QuantizesAtLoad) {
  const std::string args = "generate --quantization fp8 --prompt-ids 1,2,3 --max-tokens 6";
  CliRun graph = run_fullgraph(args);
  CliRun eager = run_fullgraph(args + " --enforce-eager");
  ASSERT_EQ(graph.exit_code, 0) << graph.output;
  EXPECT_THAT(graph.output, HasSubstr("quantized per output channel on the cpu backend"));
  EXPECT_EQ(first_line(graph.output), first_line(eager.output));
  CliRun unknown = run_fullgraph("generate --quantization int4 --prompt-ids 1");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_THAT(unknown.output, HasSubstr("--quantization"));
  CliRun twice = run_fullgraph("generate --quantization fp8 --model " +
                               (test::source_dir() / "tests/fixtures/fp8/tiny-llama-ct-dynamic").string() +
                               " --prompt-ids 1 --max-tokens 1");
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_THAT(twice.output, HasSubstr("quantized already"));
}

// --kv-cache-dtype fp8 on the CPU: the cache in e4m3, half the bytes of an F16 one per token
// (the log names the dtype); bf16 is a GPU cache and is refused on the CPU by name.
TEST(Cli, KvCacheDtypeFp8RunsOnTheCpu) {
  CliRun fp8 = run_fullgraph("generate --kv-cache-dtype fp8 --prompt-ids 1,2,3 --max-tokens 4");
  ASSERT_EQ(fp8.exit_code, 0) << fp8.output;
  const std::string ids = first_line(fp8.output);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), ','), 3) << fp8.output;
  CliRun bf16 = run_fullgraph("generate --kv-cache-dtype bf16 --prompt-ids 1");
  EXPECT_EQ(bf16.exit_code, 1);
  EXPECT_THAT(bf16.output, HasSubstr("--kv-cache-dtype bf16"));
  CliRun bad = run_fullgraph("generate --kv-cache-dtype int8 --prompt-ids 1");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.output, HasSubstr("--kv-cache-dtype"));
  // bench latency takes the option through the same parser.
  const std::string bench = "bench latency --model " + test::model_fixture("tiny-llama") +
                            " --batch-sizes 1,2 --context 20 --prefill-chunk 8 --steps 2 --warmup 1 --kv-cache-dtype ";
  CliRun bench_fp8 = run_fullgraph(bench + "fp8");
  ASSERT_EQ(bench_fp8.exit_code, 0) << bench_fp8.output;
  EXPECT_THAT(bench_fp8.output, HasSubstr("decode"));
  CliRun bench_bf16 = run_fullgraph(bench + "bf16");
  EXPECT_NE(bench_bf16.exit_code, 0);
  EXPECT_THAT(bench_bf16.output, HasSubstr("--kv-cache-dtype bf16"));
}

TEST(Cli, BadInputIsNamed) {
  CliRun bad_id = run_fullgraph("generate --prompt-ids 1,x,3");
  EXPECT_EQ(bad_id.exit_code, 1);
  EXPECT_THAT(bad_id.output, HasSubstr("'x' (item 1)"));

  CliRun out_of_vocab = run_fullgraph("generate --prompt-ids 1,100000");
  EXPECT_EQ(out_of_vocab.exit_code, 1);
  EXPECT_THAT(out_of_vocab.output, HasSubstr("outside the vocabulary of 512"));

  CliRun no_model = run_fullgraph("generate --model /nonexistent/model --prompt-ids 1");
  EXPECT_EQ(no_model.exit_code, 1);
  EXPECT_THAT(no_model.output, HasSubstr("/nonexistent/model"));

  CliRun bad_format = run_fullgraph("generate --load-format pickle --prompt-ids 1");
  EXPECT_EQ(bad_format.exit_code, 1);
  EXPECT_THAT(bad_format.output, HasSubstr("pickle"));
}

}  // namespace
}  // namespace fg
