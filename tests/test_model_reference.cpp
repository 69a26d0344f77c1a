// tests/test_model_reference.cpp — the CPU backend against Hugging Face transformers: every
// position's logits and the 16-token greedy continuation of each prompt of each fixture model,
// and the same logits again through a varlen batch and through paged prefill + decode.
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

#include "backend/cpu/cpu_backend.h"
#include "runner/greedy_generator.h"
#include "model/model_loader.h"
#include "runner/step_builder.h"
#include "test_support.h"

namespace fg {
namespace {

struct Prompt {
  std::vector<int32_t> ids;
  std::vector<float> logits;  // [T, V]
  std::vector<int32_t> greedy;
};

std::vector<Prompt> reference_prompts(const std::string& model) {
  auto file = SafetensorsFile::open(test::model_fixture(model) + "/reference.safetensors");
  std::vector<Prompt> prompts;
  for (int i = 0;; ++i) {
    const std::string p = "prompt_" + std::to_string(i) + ".";
    if (!file->find(p + "input_ids")) break;
    prompts.push_back({test::tensor_values<int32_t>(file->tensor(*file->find(p + "input_ids"))),
                       test::tensor_values<float>(file->tensor(*file->find(p + "logits"))),
                       test::tensor_values<int32_t>(file->tensor(*file->find(p + "greedy")))});
  }
  return prompts;
}

// The reference continuations come from transformers' generate(..., pad_token_id=0), which
// treats every id 0 in the prompt as padding: masked out of attention, with later positions
// renumbered. That is the same as a prompt without those ids, which is what fullgraph gets.
// (tiny-llama's 130-token prompt holds a 0 at position 30; its logits, from a plain forward,
// include it.)
std::vector<int32_t> greedy_context(const std::vector<int32_t>& prompt) {
  std::vector<int32_t> out;
  for (int32_t id : prompt)
    if (id != 0) out.push_back(id);
  return out;
}

class ModelReference : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    // The references come from a transformers model cast with .to(torch.bfloat16), which rounds
    // the RoPE inverse frequencies to bf16 (see RopeConfig); without the same rounding the logits
    // drift by up to 1e-2 at position 130, 30x the tolerance below.
    LoadOptions options;
    options.round_rope_inv_freq_to_bf16 = true;
    loaded_ = std::make_unique<LoadedModel>(load_model(test::model_fixture(GetParam()), options, backend_));
    prompts_ = reference_prompts(GetParam());
    ASSERT_EQ(prompts_.size(), 4u);
  }
  // A model with room for `tokens` tokens per step and logits for all of them.
  LlamaModel make_model(int64_t tokens) {
    LoadedModel copy = *loaded_;
    return LlamaModel(copy.config, std::move(copy.weights), backend_, tokens, tokens);
  }
  int64_t vocab() const { return loaded_->config.vocab_size; }

  CpuBackend backend_;
  std::unique_ptr<LoadedModel> loaded_;
  std::vector<Prompt> prompts_;
};

// Reference logits come from a float32 forward pass over the same bf16 weights, so the only
// differences are fp32 summation order: 1e-4 of the largest logit leaves ~100x headroom over
// what reordering 64..256-term fp32 sums produces.
TEST_P(ModelReference, LogitsAndGreedyMatchTransformers) {
  for (const Prompt& p : prompts_) {
    const int64_t T = static_cast<int64_t>(p.ids.size());
    LlamaModel model = make_model(T);
    KvCache kv = allocate_kv_cache(backend_, model.config(), (T + 16) / 16 + 3, 16, DType::kF32);
    GreedyResult r = generate_greedy(model, kv, p.ids, 16, /*keep_logits=*/true);
    const float tolerance = 1e-4f * test::max_abs(p.logits);
    EXPECT_LE(test::max_abs_diff(r.prompt_logits, p.logits), tolerance) << GetParam() << " prompt of " << T;
    EXPECT_EQ(generate_greedy(model, kv, greedy_context(p.ids), 16, false).generated, p.greedy)
        << GetParam() << " prompt of " << T;
  }
}

// Logits of every prompt from one full forward, each request alone.
std::vector<std::vector<float>> single_prompt_logits(LlamaModel& model, Backend& backend, const std::vector<Prompt>& ps,
                                                     int64_t block_size) {
  std::vector<std::vector<float>> out;
  for (const Prompt& p : ps) {
    const int64_t T = static_cast<int64_t>(p.ids.size()), blocks = (T + block_size - 1) / block_size;
    KvCache kv = allocate_kv_cache(backend, model.config(), blocks + 1, block_size, DType::kF32);
    std::vector<int32_t> ids(static_cast<size_t>(blocks));
    std::iota(ids.begin(), ids.end(), 1);
    DeviceStep d = upload_step(backend, {test::reference_request(p.ids, 0, ids, true)}, block_size, blocks);
    Tensor logits = model.forward(d.views.inputs, kv);
    out.push_back(std::vector<float>(logits.as<const float>(), logits.as<const float>() + logits.numel()));
  }
  return out;
}

// Each request's rows of a batched step must not depend on its neighbours: 1e-5 relative allows
// for nothing but fp32 reassociation (the CPU backend's arithmetic per row is in fact identical).
TEST_P(ModelReference, VarlenBatchEqualsSinglePrompts) {
  const int64_t block_size = 16;
  int64_t total = 0, max_blocks = 0;
  for (const Prompt& p : prompts_) {
    total += static_cast<int64_t>(p.ids.size());
    max_blocks = std::max<int64_t>(max_blocks, (static_cast<int64_t>(p.ids.size()) + block_size - 1) / block_size);
  }
  LlamaModel model = make_model(total);
  const auto singles = single_prompt_logits(model, backend_, prompts_, block_size);

  // Requests get interleaved, non-contiguous blocks so that block-table indexing is exercised.
  KvCache kv = allocate_kv_cache(backend_, model.config(), 1 + max_blocks * 4, block_size, DType::kF32);
  std::vector<std::vector<int32_t>> block_ids(prompts_.size());
  std::vector<ScheduledRequest> requests;
  for (size_t r = 0; r < prompts_.size(); ++r) {
    const int64_t blocks = (static_cast<int64_t>(prompts_[r].ids.size()) + block_size - 1) / block_size;
    for (int64_t b = 0; b < blocks; ++b) block_ids[r].push_back(static_cast<int32_t>(1 + b * 4 + (3 - r)));
    requests.push_back(test::reference_request(prompts_[r].ids, 0, block_ids[r], true));
  }
  DeviceStep d = upload_step(backend_, requests, block_size, max_blocks);
  Tensor logits = model.forward(d.views.inputs, kv);
  int64_t row = 0;
  for (size_t r = 0; r < prompts_.size(); ++r) {
    const int64_t T = static_cast<int64_t>(prompts_[r].ids.size());
    const Tensor mine = logits.rows(row, T);
    std::vector<float> got(mine.as<const float>(), mine.as<const float>() + mine.numel());
    EXPECT_LE(test::max_abs_diff(got, singles[r]), 1e-5f * test::max_abs(singles[r])) << "request " << r;
    row += T;
  }
}

// Prefill of the first part of the prompt, then one token per step through the paged cache,
// with a block size (17) that divides none of the prompt lengths (1, 7, 33, 130).
TEST_P(ModelReference, PagedPrefillThenDecodeEqualsFullForward) {
  const int64_t block_size = 17;
  for (size_t i = 0; i < prompts_.size(); ++i) {
    const Prompt& p = prompts_[i];
    const int64_t T = static_cast<int64_t>(p.ids.size()), V = vocab();
    LlamaModel model = make_model(T);
    const std::vector<float> full = single_prompt_logits(model, backend_, {p}, block_size)[0];
    const int64_t blocks = (T + block_size - 1) / block_size;
    KvCache kv = allocate_kv_cache(backend_, model.config(), blocks + 1, block_size, DType::kF32);
    std::vector<int32_t> ids(static_cast<size_t>(blocks));
    std::iota(ids.rbegin(), ids.rend(), 1);  // blocks in descending order: position != slot
    const int64_t prefill = T / 2 > 0 ? T / 2 : 1;

    std::vector<float> got;
    std::vector<int32_t> first(p.ids.begin(), p.ids.begin() + prefill);
    DeviceStep d = upload_step(backend_, {test::reference_request(first, 0, ids, true)}, block_size, blocks);
    Tensor logits = model.forward(d.views.inputs, kv);
    got.insert(got.end(), logits.as<const float>(), logits.as<const float>() + logits.numel());
    for (int64_t t = prefill; t < T; ++t) {
      DeviceStep s =
          upload_step(backend_, {test::reference_request({&p.ids[t], 1}, t, ids, false)}, block_size, blocks);
      Tensor row = model.forward(s.views.inputs, kv);
      got.insert(got.end(), row.as<const float>(), row.as<const float>() + V);
    }
    EXPECT_LE(test::max_abs_diff(got, full), 1e-5f * test::max_abs(full)) << "prompt " << i << " of " << T;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ModelReference, ::testing::ValuesIn(test::fixture_models()),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace fg
