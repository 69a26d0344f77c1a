// tests/test_e2e.cpp — text in, text out, against transformers: for every line of the e2e goldens
// the prompt (or the chat rendered with add_generation_prompt) encodes to exactly prompt_ids, and
// greedy generation on the CPU backend yields exactly output_ids, which decode to output_text.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_backend.h"
#include "runner/greedy_generator.h"
#include "model/model_loader.h"
#include "test_support.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace fg {
namespace {

struct E2eCase {
  std::string model;      // folder under e2e/
  std::string tokenizer;  // folder under tokenizers/
};

class E2e : public ::testing::TestWithParam<E2eCase> {};

TEST_P(E2e, PromptIdsOutputIdsAndTextMatchTransformers) {
  const std::string data = test::testdata_dir();
  const std::string tok_dir = data + "/tokenizers/" + GetParam().tokenizer;
  const Tokenizer tokenizer = Tokenizer::from_file(tok_dir + "/tokenizer.json");
  const ChatTemplateConfig chat = load_chat_template_config(tok_dir, /*require_template=*/false);

  CpuBackend backend;
  LoadOptions load;
  load.round_rope_inv_freq_to_bf16 = true;  // the model was cast with .to(bfloat16): see test_model_reference.cpp
  LoadedModel loaded = load_model(data + "/e2e/" + GetParam().model, load, backend);

  std::ifstream golden(data + "/e2e/" + GetParam().model + "/e2e_golden.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(golden, line)) {
    const nlohmann::ordered_json g = nlohmann::ordered_json::parse(line);
    std::string text;
    bool add_special = true;
    if (g.contains("prompt")) {
      text = g["prompt"].get<std::string>();
    } else {
      ChatRenderOptions options;
      options.add_generation_prompt = true;
      text = render_chat(chat, g["chat"], options);
      add_special = false;  // the rendered template already holds its special tokens
    }
    const std::vector<int32_t> ids = tokenizer.encode(text, add_special);
    EXPECT_EQ(ids, g["prompt_ids"].get<std::vector<int32_t>>()) << line;

    // transformers' generate(pad_token_id=0) masks id 0 out of the prompt (see greedy_context in
    // test_model_reference.cpp); none of these prompts holds one, which this checks.
    ASSERT_EQ(std::count(ids.begin(), ids.end(), 0), 0) << "a prompt with id 0 needs the masking rule";
    const int64_t T = static_cast<int64_t>(ids.size());
    LlamaModel model(loaded.config, loaded.weights, backend, T, 1);
    KvCache kv = allocate_kv_cache(backend, loaded.config, (T + 12) / 16 + 2, 16, DType::kF32);
    const GreedyResult r = generate_greedy(model, kv, ids, 12, false);
    EXPECT_EQ(r.generated, g["output_ids"].get<std::vector<int32_t>>()) << line;
    EXPECT_EQ(tokenizer.decode(r.generated, false), g["output_text"].get<std::string>()) << line;
    ++lines;
  }
  EXPECT_GE(lines, 2);
}

INSTANTIATE_TEST_SUITE_P(Goldens, E2e,
                         ::testing::Values(E2eCase{"tiny-llama2tok", "llama2"}, E2eCase{"tiny-qwen3tok", "qwen3"}),
                         [](const auto& info) { return info.param.tokenizer; });

}  // namespace
}  // namespace fg
