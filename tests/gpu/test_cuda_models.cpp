// tests/gpu/test_cuda_models.cpp — whole models through LlamaModel on the CudaBackend (eager):
// the four fixture models against the Hugging Face reference logits (with the reference GPU
// attention: the flash kernels are built for head_dim 64 and 128, the fixtures have 16 and 32),
// and dummy-weight models of head_dim 64 and 128 against the CPU backend, with every attention.
//
// Tolerances. The reference is a float32 forward over the bf16 weights; the GPU keeps bf16
// activations between ops (each rounding is 2^-9 relative), so a whole forward of 2-3 layers
// lands around 1e-2 of the logits' norm: ||logits - ref|| / ||ref|| <= 2e-2 per prompt catches
// any indexing, masking or layout error (those are O(1)). The top-1 token must match wherever the
// reference's best and second-best logits are more than 2% of its largest |logit| apart: closer
// calls may legitimately flip under bf16 rounding.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "runner/greedy_generator.h"
#include "gpu/gpu_test_support.h"
#include "model/model_loader.h"
#include "model/safetensors.h"
#include "runner/step_builder.h"
#include "test_support.h"

namespace fg {
namespace {

constexpr double kLogitsTolerance = 2e-2;

using Prompt = test::ReferencePrompt;

std::vector<Prompt> reference_prompts(const std::string& model) {
  return test::reference_logits(test::model_fixture(model) + "/reference.safetensors");
}


// Logits [T, V] of every position of `ids`: a prefill of the first `prefill` tokens, then one token
// per step through the paged cache (the decode path: small-n linears, single-token attention over
// a growing context), with blocks in descending order so that positions are not slots.
std::vector<float> paged_logits(Backend& backend, LlamaModel& model, const std::vector<int32_t>& ids, int64_t prefill,
                                int64_t block_size) {
  const int64_t T = static_cast<int64_t>(ids.size()), V = model.config().vocab_size;
  const int64_t blocks = (T + block_size - 1) / block_size;
  KvCache kv = allocate_kv_cache(backend, model.config(), blocks + 1, block_size, backend.activation_dtype());
  std::vector<int32_t> block_ids(static_cast<size_t>(blocks));
  std::iota(block_ids.rbegin(), block_ids.rend(), 1);

  std::vector<float> got(static_cast<size_t>(T * V));
  const std::vector<int32_t> first(ids.begin(), ids.begin() + prefill);
  DeviceStep d = upload_step(backend, {test::reference_request(first, 0, block_ids, true)}, block_size, blocks);
  backend.copy_to_host(got.data(), model.forward(d.views.inputs, kv));
  for (int64_t t = prefill; t < T; ++t) {
    DeviceStep s =
        upload_step(backend, {test::reference_request({&ids[t], 1}, t, block_ids, false)}, block_size, blocks);
    backend.copy_to_host(got.data() + t * V, model.forward(s.views.inputs, kv));
  }
  return got;
}

using Param = std::tuple<std::string, std::string>;  // (model, attention backend)

class CudaModels : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    FG_REQUIRE_GPU();
    backend_ = std::make_unique<CudaBackend>();
    // As tests/test_model_reference.cpp explains: the references come from a model cast with
    // .to(torch.bfloat16), which rounds the RoPE inverse frequencies to bf16.
    LoadOptions options;
    options.round_rope_inv_freq_to_bf16 = true;
    loaded_ = std::make_unique<LoadedModel>(load_model(test::model_fixture(model()), options, *backend_));
    prompts_ = reference_prompts(model());
    ASSERT_EQ(prompts_.size(), 4u);
  }
  const std::string& model() const { return std::get<0>(GetParam()); }
  const std::string& attention() const { return std::get<1>(GetParam()); }
  int64_t vocab() const { return loaded_->config.vocab_size; }

  // A model with room for `tokens` tokens and logits rows per step, and its attention.
  LlamaModel make_model(int64_t tokens, int64_t context, int64_t block_size) {
    const ModelConfig& c = loaded_->config;
    backend_->set_attention(make_attention_backend(attention(), attention_limits(c, tokens, 1, context, block_size)));
    LoadedModel copy = *loaded_;  // shares the device weights
    return LlamaModel(copy.config, std::move(copy.weights), *backend_, tokens, tokens);
  }
  std::string where(size_t prompt) const {
    return model() + " with " + attention() + " attention, prompt of " + std::to_string(prompts_[prompt].ids.size());
  }

  std::unique_ptr<CudaBackend> backend_;
  std::unique_ptr<LoadedModel> loaded_;
  std::vector<Prompt> prompts_;
};

// One prefill over the whole prompt: the cuBLASLt path for the longer prompts, the small-n
// kernel for the 1- and 7-token ones.
TEST_P(CudaModels, PrefillLogitsMatchTransformers) {
  for (size_t i = 0; i < prompts_.size(); ++i) {
    const Prompt& p = prompts_[i];
    const int64_t T = static_cast<int64_t>(p.ids.size()), block_size = 16;
    LlamaModel model = make_model(T, T, block_size);
    KvCache kv = allocate_kv_cache(*backend_, model.config(), (T + block_size - 1) / block_size + 1, block_size,
                                   DType::kBF16);
    model.fill_activations(0xFF);  // NaN everywhere a kernel did not write
    const GreedyResult r = generate_greedy(model, kv, p.ids, 0, /*keep_logits=*/true);
    EXPECT_LE(gpu_test::relative_error(r.prompt_logits, p.logits), kLogitsTolerance) << where(i);
    EXPECT_EQ(gpu_test::top1_mismatches(r.prompt_logits, p.logits, vocab()), "") << where(i);
  }
}

// The first half of the prompt as a prefill, then one token per step, with a block size (17)
// that divides none of the prompt lengths.
TEST_P(CudaModels, PagedDecodeLogitsMatchTransformers) {
  for (size_t i = 0; i < prompts_.size(); ++i) {
    const Prompt& p = prompts_[i];
    const int64_t T = static_cast<int64_t>(p.ids.size()), prefill = std::max<int64_t>(1, T / 2);
    LlamaModel model = make_model(prefill, T, 17);
    const std::vector<float> got = paged_logits(*backend_, model, p.ids, prefill, 17);
    EXPECT_LE(gpu_test::relative_error(got, p.logits), kLogitsTolerance) << where(i);
    EXPECT_EQ(gpu_test::top1_mismatches(got, p.logits, vocab()), "") << where(i);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaModels,
                         ::testing::Combine(::testing::ValuesIn(test::fixture_models()),
                                            ::testing::Values("reference")),
                         [](const auto& info) {
                           std::string name = std::get<0>(info.param) + "_" + std::get<1>(info.param);
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// F16 and F32 checkpoints run on the GPU as BF16 (the loader converts: Backend::weight_dtype). An
// F32 copy of a BF16 fixture converts back exactly, so its logits equal the BF16 checkpoint's bit
// for bit; BF16 -> F16 is exact except for weights below F16's normal range, so an F16 copy must
// still meet the reference.
TEST(CudaModelsDtype, F16AndF32CheckpointsRunAsBf16) {
  FG_REQUIRE_GPU();
  const std::string fixture = test::model_fixture("tiny-llama");
  const auto source = SafetensorsFile::open(fixture + "/model.safetensors");
  const Prompt prompt = reference_prompts("tiny-llama").back();
  LoadOptions options;
  options.round_rope_inv_freq_to_bf16 = true;
  CudaBackend backend;
  auto logits_of = [&](const std::string& dir) {
    LoadedModel loaded = load_model(dir, options, backend);
    const int64_t T = static_cast<int64_t>(prompt.ids.size()), block_size = 16;
    backend.set_attention(make_attention_backend("reference", attention_limits(loaded.config, T, 1, T, block_size)));
    LlamaModel model(loaded.config, std::move(loaded.weights), backend, T, T);
    KvCache kv = allocate_kv_cache(backend, model.config(), (T + block_size - 1) / block_size + 1, block_size,
                                   DType::kBF16);
    return generate_greedy(model, kv, prompt.ids, 0, /*keep_logits=*/true).prompt_logits;
  };
  const std::vector<float> bf16_logits = logits_of(fixture);

  for (DType dtype : {DType::kF32, DType::kF16}) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                      ("fg_dtype_" + std::to_string(::getpid()) + "_" + std::string(dtype_name(dtype)));
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(fixture + "/config.json", dir / "config.json",
                               std::filesystem::copy_options::overwrite_existing);
    std::vector<std::vector<std::byte>> storage;
    std::vector<NamedTensor> tensors;
    for (const SafetensorsEntry& entry : source->header().entries) {
      const Tensor bf16 = source->tensor(entry);
      ASSERT_EQ(bf16.dtype, DType::kBF16) << entry.name;
      std::vector<std::byte>& bytes = storage.emplace_back(static_cast<size_t>(bf16.numel()) * dtype_size(dtype));
      for (int64_t i = 0; i < bf16.numel(); ++i) {
        const float value = bf16_to_float(static_cast<const uint16_t*>(bf16.data)[i]);
        if (dtype == DType::kF32) reinterpret_cast<float*>(bytes.data())[i] = value;
        else reinterpret_cast<uint16_t*>(bytes.data())[i] = float_to_f16(value);
      }
      Tensor copy = bf16;
      copy.dtype = dtype;
      copy.data = bytes.data();
      tensors.push_back({entry.name, copy});
    }
    write_safetensors((dir / "model.safetensors").string(), tensors);
    const std::vector<float> got = logits_of(dir.string());
    std::filesystem::remove_all(dir);
    if (dtype == DType::kF32) {
      EXPECT_EQ(got, bf16_logits) << "F32 checkpoint";
    } else {
      EXPECT_LE(gpu_test::relative_error(got, prompt.logits), kLogitsTolerance) << "F16 checkpoint";
      EXPECT_EQ(gpu_test::top1_mismatches(got, prompt.logits, static_cast<int64_t>(prompt.logits.size() / prompt.ids.size())), "")
          << "F16 checkpoint";
    }
  }
}

// Dummy-weight models shaped for the flash kernels (head_dim 64 and 128; Llama, Qwen2 biases,
// Qwen3 q/k norms) on the GPU against the same weights on the CPU backend: a 45-token prefill
// (cuBLASLt) and 6 decode steps (the small-n kernel), with the attention backends that serve
// mixed batches (split_kv takes uniform decode batches only).
const char* dummy_config(const std::string& name) {
  if (name == "llama_hd64")
    return R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
               "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
               "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1000, "max_position_embeddings": 512,
               "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": false, "dtype": "bfloat16"})";
  if (name == "qwen2_hd64")
    return R"({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 384,
               "intermediate_size": 768, "num_hidden_layers": 2, "num_attention_heads": 6,
               "num_key_value_heads": 2, "vocab_size": 768, "max_position_embeddings": 512,
               "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": true, "dtype": "bfloat16"})";
  return R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 256,
             "intermediate_size": 640, "num_hidden_layers": 2, "num_attention_heads": 8,
             "num_key_value_heads": 1, "head_dim": 128, "vocab_size": 512, "max_position_embeddings": 512,
             "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": false, "dtype": "bfloat16"})";
}

class CudaModelsVsCpu : public ::testing::TestWithParam<Param> {};

TEST_P(CudaModelsVsCpu, LogitsMatchTheCpuBackend) {
  FG_REQUIRE_GPU();
  const auto& [name, attention] = GetParam();
  const ModelConfig config = parse_model_config(dummy_config(name), name);
  std::vector<int32_t> ids(51);
  std::mt19937 rng(3);
  for (auto& id : ids) id = static_cast<int32_t>(rng() % config.vocab_size);
  const int64_t prefill = 45, block_size = 16, T = static_cast<int64_t>(ids.size());

  CpuBackend cpu;
  LlamaModel cpu_model(config, dummy_weights(config, cpu, 5), cpu, T, T);
  const std::vector<float> ref = paged_logits(cpu, cpu_model, ids, prefill, block_size);

  CudaBackend gpu;
  gpu.set_attention(make_attention_backend(attention, attention_limits(config, prefill, 1, T, block_size)));
  LlamaModel gpu_model(config, dummy_weights(config, gpu, 5), gpu, prefill, prefill);
  gpu_model.fill_activations(0xFF);
  const std::vector<float> got = paged_logits(gpu, gpu_model, ids, prefill, block_size);
  EXPECT_LE(gpu_test::relative_error(got, ref), kLogitsTolerance) << name << " with " << attention;
  EXPECT_EQ(gpu_test::top1_mismatches(got, ref, config.vocab_size), "") << name << " with " << attention;
}

INSTANTIATE_TEST_SUITE_P(Dummy, CudaModelsVsCpu,
                         ::testing::Combine(::testing::Values("llama_hd64", "qwen2_hd64", "qwen3_hd128"),
                                            ::testing::Values("reference", "flash")),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

}  // namespace
}  // namespace fg
