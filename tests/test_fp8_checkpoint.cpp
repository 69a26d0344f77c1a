// tests/test_fp8_checkpoint.cpp — FP8 checkpoints on the CPU backend: every layout of
// tests/fixtures/fp8 (scripts/fp8/make_fp8_fixtures.py) against transformers' logits on the
// dequantized weights, the FP8 activation rounding op, and the refusal, naming the field or the
// tensor, of every quantization config and checkpoint that fullgraph does not run.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <functional>
#include <numeric>

#include "backend/cpu/cpu_backend.h"
#include "gguf_test_support.h"
#include "model/config.h"
#include "model/model_loader.h"
#include "runner/greedy_generator.h"
#include "runner/step_builder.h"
#include "test_support.h"

namespace fg {
namespace {

using nlohmann::json;

std::filesystem::path fp8_fixture(const std::string& name) { return test::source_dir() / "tests" / "fixtures" / "fp8" / name; }

json fixture_config(const std::string& name) {
  std::ifstream in(fp8_fixture(name) / "config.json");
  return json::parse(in);
}

using Prompt = test::ReferencePrompt;

std::vector<Prompt> reference_prompts(const std::string& name) {
  return test::reference_logits((fp8_fixture(name) / "reference.safetensors").string());
}

// ---- logits against transformers --------------------------------------------------------------

class Fp8Reference : public ::testing::TestWithParam<std::string> {};

// The reference runs the same dequantized weights (fp8 * scale is exact in fp32 on both sides) and
// the same activation rounding, so what differs is fp32 summation order, as in
// test_model_reference.cpp: 1e-4 of the largest logit. The rounding can amplify an order
// difference: an input landing within fp32 reassociation noise (~1e-7 relative) of a midpoint
// between two e4m3 values rounds the other way, moving that element by one e4m3 step (1/16 of its
// size). Measured (scripts/fp8/measure_rounding_flips.py, torch against itself with fp64 matmuls):
// 1 flip in 44,608 rounded elements of tiny-llama-ct-dynamic's 33-token prompt, which moves its
// logits by 2e-5 relative, and none in the other fixtures' 147k. Here: 1.5e-7..1.2e-6 everywhere,
// and 2.0e-5 on that prompt (the same flip), so 1e-4 holds up to ~5 flips a prompt.
TEST_P(Fp8Reference, LogitsMatchTransformersOnDequantizedWeights) {
  CpuBackend backend;
  LoadedModel loaded = load_model(fp8_fixture(GetParam()).string(), LoadOptions{}, backend);
  ASSERT_TRUE(loaded.config.quantization.has_value());
  const std::vector<Prompt> prompts = reference_prompts(GetParam());
  ASSERT_EQ(prompts.size(), 3u);
  for (const Prompt& p : prompts) {
    const int64_t T = static_cast<int64_t>(p.ids.size());
    LoadedModel copy = loaded;
    LlamaModel model(copy.config, std::move(copy.weights), backend, T, T);
    KvCache kv = allocate_kv_cache(backend, model.config(), (T + 16) / 16 + 3, 16, DType::kF32);
    GreedyResult r = generate_greedy(model, kv, p.ids, 1, /*keep_logits=*/true);
    const float relative = test::max_abs_diff(r.prompt_logits, p.logits) / test::max_abs(p.logits);
    std::printf("%s, prompt of %lld: max |diff| / max |ref| = %.3g\n", GetParam().c_str(), static_cast<long long>(T),
                relative);
    EXPECT_LE(relative, 1e-4f) << GetParam() << " prompt of " << T;
  }
}

// Dynamic scales are per token, so a prompt's rows must not depend on what it is batched with:
// the three prompts in one step give each prompt's logits from its own step, bit for bit (the CPU
// backend's arithmetic per row is the same at every batch size).
TEST_P(Fp8Reference, BatchedPromptsEqualSinglePrompts) {
  CpuBackend backend;
  const LoadedModel loaded = load_model(fp8_fixture(GetParam()).string(), LoadOptions{}, backend);
  const std::vector<Prompt> prompts = reference_prompts(GetParam());
  const int64_t block_size = 16;
  int64_t total = 0, max_blocks = 0;
  for (const Prompt& p : prompts) {
    total += static_cast<int64_t>(p.ids.size());
    max_blocks = std::max<int64_t>(max_blocks, (static_cast<int64_t>(p.ids.size()) + block_size - 1) / block_size);
  }
  LoadedModel copy = loaded;
  LlamaModel model(copy.config, std::move(copy.weights), backend, total, total);
  const auto run = [&](const std::vector<size_t>& which) {
    KvCache kv = allocate_kv_cache(backend, model.config(), 1 + max_blocks * 3, block_size, DType::kF32);
    std::vector<std::vector<int32_t>> blocks(which.size());
    std::vector<ScheduledRequest> requests;
    for (size_t r = 0; r < which.size(); ++r) {
      const int64_t n = (static_cast<int64_t>(prompts[which[r]].ids.size()) + block_size - 1) / block_size;
      for (int64_t b = 0; b < n; ++b) blocks[r].push_back(static_cast<int32_t>(1 + r * max_blocks + b));
      requests.push_back(test::reference_request(prompts[which[r]].ids, 0, blocks[r], true));
    }
    DeviceStep d = upload_step(backend, requests, block_size, max_blocks);
    const Tensor logits = model.forward(d.views.inputs, kv);
    return std::vector<float>(logits.as<const float>(), logits.as<const float>() + logits.numel());
  };
  const std::vector<float> batched = run({0, 1, 2});
  size_t offset = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::vector<float> single = run({i});
    ASSERT_LE(offset + single.size(), batched.size());
    EXPECT_TRUE(std::equal(single.begin(), single.end(), batched.begin() + static_cast<std::ptrdiff_t>(offset)))
        << GetParam() << " prompt " << i;
    offset += single.size();
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Fp8Reference,
                         ::testing::Values("tiny-llama-ct-dynamic", "tiny-llama-fp8-static", "tiny-qwen2-ct-static",
                                           "tiny-qwen3-fp8-dynamic", "tiny-llama3-rope-ct-weight"));

TEST(Fp8Config, FixturesParseAsWritten) {
  const ModelConfig dynamic = load_model_config((fp8_fixture("tiny-llama-ct-dynamic") / "config.json").string());
  ASSERT_TRUE(dynamic.quantization);
  EXPECT_EQ(dynamic.quantization->method, "compressed-tensors");
  EXPECT_EQ(dynamic.quantization->weight_scale, WeightScaleGranularity::kPerChannel);
  EXPECT_EQ(dynamic.quantization->activations, ActivationScheme::kDynamicPerToken);
  EXPECT_FALSE(dynamic.quantization->quantizes("lm_head"));
  EXPECT_TRUE(dynamic.quantization->quantizes("model.layers.0.self_attn.q_proj"));

  const ModelConfig fp8 = load_model_config((fp8_fixture("tiny-qwen3-fp8-dynamic") / "config.json").string());
  ASSERT_TRUE(fp8.quantization);
  EXPECT_EQ(fp8.quantization->weight_scale, WeightScaleGranularity::kPerTensor);
  EXPECT_FALSE(fp8.quantization->quantizes("model.layers.0.self_attn.k_proj"));  // a parent entry
  EXPECT_TRUE(fp8.quantization->quantizes("model.layers.0.mlp.up_proj"));
  EXPECT_TRUE(fp8.quantization->quantizes("model.layers.10.self_attn.k_proj"));

  const ModelConfig regex = load_model_config((fp8_fixture("tiny-qwen2-ct-static") / "config.json").string());
  ASSERT_TRUE(regex.quantization);
  EXPECT_EQ(regex.quantization->activations, ActivationScheme::kStaticPerTensor);
  EXPECT_FALSE(regex.quantization->quantizes("model.layers.1.mlp.down_proj"));
  EXPECT_TRUE(regex.quantization->quantizes("model.layers.0.mlp.down_proj"));

  const ModelConfig weight_only = load_model_config((fp8_fixture("tiny-llama3-rope-ct-weight") / "config.json").string());
  ASSERT_TRUE(weight_only.quantization);
  EXPECT_EQ(weight_only.quantization->activations, ActivationScheme::kNone);
}

// ---- the activation rounding op ---------------------------------------------------------------

TEST(Fp8Round, DynamicPerRowStaticClampedAndZeroRows) {
  CpuBackend backend;
  // Row 0: s = 3 / 448, so x / s = 448, -224 and 14.93.., which rounds to 15 (spacing 1 in [8, 16)).
  // Row 1: all zero. Row 2: below the smallest e4m3 spacing relative to its max, so it rounds to 0.
  std::vector<float> x = {3.0f, -1.5f, 0.1f, 0.0f, 0.0f, 0.0f, 448.0f, 0x1p-20f, -1.0f};
  std::vector<uint8_t> values(x.size());
  std::vector<float> scales(3);
  const Tensor in(x.data(), DType::kF32, {3, 3});
  const Fp8Rows out{Tensor(values.data(), DType::kF8E4M3, {3, 3}), Tensor(scales.data(), DType::kF32, {3})};
  const auto rounded = [&](int i) { return e4m3_to_float(values[i]) * scales[i / 3]; };
  backend.quantize_fp8(in, 0.0f, out);
  const float s = 3.0f / 448.0f;
  EXPECT_EQ(scales[0], s);
  EXPECT_EQ(scales[1], 1.0f);  // a row of zeros
  EXPECT_EQ(scales[2], 1.0f);  // 448 / 448
  EXPECT_EQ(rounded(0), 448.0f * s);
  EXPECT_EQ(rounded(1), -224.0f * s);
  EXPECT_EQ(rounded(2), 15.0f * s);
  EXPECT_EQ(rounded(3), 0.0f);
  EXPECT_EQ(rounded(5), 0.0f);
  EXPECT_EQ(rounded(6), 448.0f);
  EXPECT_EQ(rounded(7), 0.0f);
  EXPECT_EQ(rounded(8), -1.0f);

  // A static scale: 3 / 0.01 = 300 rounds to 288 (spacing 32 in [256, 448]); 448 / 0.01 clamps to
  // 448; -1 / 0.01 = -100 is the midpoint of -96 and -104 and goes to the even code, -96.
  backend.quantize_fp8(in, 0.01f, out);
  EXPECT_EQ(scales[0], 0.01f);
  EXPECT_EQ(rounded(0), 288.0f * 0.01f);
  EXPECT_EQ(rounded(6), 448.0f * 0.01f);
  EXPECT_EQ(rounded(8), -96.0f * 0.01f);
  EXPECT_NE(test::error_of([&] { backend.quantize_fp8(in, -1.0f, out); }).find("static input scale"),
            std::string::npos);
}

// Per-channel weight quantization (--quantization fp8): each row's scale is its max / 448, and
// every value rounds to nearest even at that scale.
TEST(Fp8Round, WeightsQuantizePerOutputChannel) {
  CpuBackend backend;
  std::vector<float> w = {1.0f, -0.5f, 0.3f, 0.0f, 0.0f, 0.0f, -896.0f, 2.0f, 100.0f};
  std::vector<uint8_t> q(w.size());
  std::vector<float> scales(3);
  backend.quantize_weight_fp8(Tensor(w.data(), DType::kF32, {3, 3}), Tensor(q.data(), DType::kF8E4M3, {3, 3}),
                              Tensor(scales.data(), DType::kF32, {3}));
  EXPECT_EQ(scales[0], 1.0f / 448.0f);
  EXPECT_EQ(scales[1], 1.0f);
  EXPECT_EQ(scales[2], 2.0f);
  for (size_t i = 0; i < w.size(); ++i) {
    const float s = scales[i / 3];
    EXPECT_EQ(q[i], float_to_e4m3(w[i] / s)) << i;
  }
  EXPECT_EQ(e4m3_to_float(q[6]) * scales[2], -896.0f);  // the row's max is exact
}

// ---- refused configs --------------------------------------------------------------------------

// Writes `config` into a temporary folder and returns load_model_config's error.
std::string config_refusal(const json& config) {
  test::TempDirPath dir("fg_fp8_config");
  std::ofstream(dir / "config.json") << config.dump(2);
  return test::error_of([&] { load_model_config(dir / "config.json"); });
}

json edited(const std::string& fixture, const std::function<void(json&)>& edit) {
  json config = fixture_config(fixture);
  edit(config);
  return config;
}

#define EXPECT_MENTIONS(message, part) \
  EXPECT_NE((message).find(part), std::string::npos) << "message: " << (message) << "\nexpected to mention: " << (part)

constexpr const char* kCt = "tiny-llama-ct-dynamic";
constexpr const char* kFp8 = "tiny-llama-fp8-static";

json& ct_weights(json& j) { return j["quantization_config"]["config_groups"]["group_0"]["weights"]; }
json& ct_inputs(json& j) { return j["quantization_config"]["config_groups"]["group_0"]["input_activations"]; }
// A valid KV-cache scheme (as llm-compressor writes it) for a case to break.
json& kv_scheme(json& j) {
  json& kv = j["quantization_config"]["kv_cache_scheme"];
  kv = {{"num_bits", 8}, {"type", "float"}, {"strategy", "tensor"}, {"dynamic", false}, {"symmetric", true}};
  return kv;
}

struct RefusedCase {
  const char* what;
  const char* fixture;
  std::function<void(json&)> edit;
  std::vector<std::string> mentions;
};

TEST(Fp8Config, EveryUnsupportedSettingIsRefusedNamingIt) {
  const std::vector<RefusedCase> cases = {
      {"another method", kCt, [](json& j) { j["quantization_config"]["quant_method"] = "awq"; },
       {"quantization_config.quant_method", "'awq'"}},
      {"no method", kCt, [](json& j) { j["quantization_config"].erase("quant_method"); },
       {"quant_method is missing"}},
      {"4 bits", kCt, [](json& j) { ct_weights(j)["num_bits"] = 4; },
       {"config_groups.group_0.weights.num_bits", "4"}},
      {"integers", kCt, [](json& j) { ct_weights(j)["type"] = "int"; }, {"weights.type", "'int'"}},
      {"group scales", kCt, [](json& j) { ct_weights(j)["strategy"] = "group"; },
       {"weights.strategy", "'group'"}},
      {"group size", kCt, [](json& j) { ct_weights(j)["group_size"] = 128; }, {"weights.group_size", "128"}},
      {"block scales", kCt, [](json& j) { ct_weights(j)["strategy"] = "block"; }, {"weights.strategy", "'block'"}},
      {"block structure", kCt, [](json& j) { ct_weights(j)["block_structure"] = {128, 128}; },
       {"weights.block_structure"}},
      {"asymmetric", kCt, [](json& j) { ct_weights(j)["symmetric"] = false; }, {"weights.symmetric", "asymmetric"}},
      {"dynamic weights", kCt, [](json& j) { ct_weights(j)["dynamic"] = true; }, {"weights.dynamic"}},
      {"static per-token", kCt, [](json& j) { ct_inputs(j)["dynamic"] = false; },
       {"input_activations", "strategy 'token' with dynamic false"}},
      {"dynamic per-tensor", kCt, [](json& j) { ct_inputs(j)["strategy"] = "tensor"; },
       {"input_activations", "strategy 'tensor' with dynamic true"}},
      {"group inputs", kCt, [](json& j) { ct_inputs(j)["strategy"] = "group"; },
       {"input_activations.strategy", "'group'"}},
      {"int inputs", kCt, [](json& j) { ct_inputs(j)["type"] = "int"; }, {"input_activations.type", "'int'"}},
      {"kv cache 4 bits", kCt, [](json& j) { kv_scheme(j)["num_bits"] = 4; },
       {"quantization_config.kv_cache_scheme.num_bits", "4"}},
      {"kv cache per head", kCt, [](json& j) { kv_scheme(j)["strategy"] = "channel"; },
       {"quantization_config.kv_cache_scheme.strategy", "'channel'"}},
      {"kv cache dynamic", kCt, [](json& j) { kv_scheme(j)["dynamic"] = true; },
       {"quantization_config.kv_cache_scheme.dynamic"}},
      {"kv cache ints", kCt, [](json& j) { kv_scheme(j)["type"] = "int"; },
       {"quantization_config.kv_cache_scheme.type", "'int'"}},
      {"packed format", kCt, [](json& j) { j["quantization_config"]["format"] = "pack-quantized"; },
       {"quantization_config.format", "'pack-quantized'"}},
      {"other targets", kCt,
       [](json& j) { j["quantization_config"]["config_groups"]["group_0"]["targets"] = {"Linear", "Embedding"}; },
       {"group_0.targets"}},
      {"two groups", kCt,
       [](json& j) {
         j["quantization_config"]["config_groups"]["group_1"] = j["quantization_config"]["config_groups"]["group_0"];
       },
       {"quantization_config.config_groups", "2 groups"}},
      {"output activations", kCt,
       [](json& j) { j["quantization_config"]["config_groups"]["group_0"]["output_activations"] = ct_inputs(j); },
       {"group_0.output_activations"}},
      {"sparsity", kCt, [](json& j) { j["quantization_config"]["sparsity_config"] = {{"format", "sparse-24"}}; },
       {"quantization_config.sparsity_config"}},
      {"unknown key", kCt, [](json& j) { j["quantization_config"]["rotations"] = {1}; },
       {"quantization_config.rotations", "not supported"}},
      {"bad ignore regex", kCt, [](json& j) { j["quantization_config"]["ignore"] = {"re:("}; },
       {"quantization_config.ignore[0]", "regular expression"}},
      {"both keys", kCt, [](json& j) { j["compression_config"] = j["quantization_config"]; },
       {"quantization_config and compression_config"}},
      {"fp8 blocks", kFp8, [](json& j) { j["quantization_config"]["weight_block_size"] = {128, 128}; },
       {"quantization_config.weight_block_size", "block-wise"}},
      {"fp8 scheme", kFp8, [](json& j) { j["quantization_config"]["activation_scheme"] = "per_token"; },
       {"quantization_config.activation_scheme", "'per_token'"}},
      {"fp8 e5m2", kFp8, [](json& j) { j["quantization_config"]["fmt"] = "e5m2"; },
       {"quantization_config.fmt", "'e5m2'"}},
      {"fp8 kv cache", kFp8, [](json& j) { j["quantization_config"]["kv_cache_scheme"] = "fp8"; },
       {"quantization_config.kv_cache_scheme", "'fp8'"}},
  };
  for (const RefusedCase& c : cases) {
    const std::string message = config_refusal(edited(c.fixture, c.edit));
    EXPECT_MENTIONS(message, "config.json") << c.what;
    for (const std::string& part : c.mentions) EXPECT_MENTIONS(message, part) << c.what;
  }
}

// kv_cache_scheme in either spelling asks for the checkpoint's per-layer k/v scales.
TEST(Fp8Config, KvCacheSchemeAsksForCheckpointScales) {
  for (const auto& [fixture, edit] : std::vector<std::pair<const char*, std::function<void(json&)>>>{
           {kCt, [](json& j) { kv_scheme(j); }},
           {kFp8, [](json& j) { j["quantization_config"]["kv_cache_scheme"] = "static"; }}}) {
    test::TempDirPath dir("fg_fp8_kv_config");
    std::ofstream(dir / "config.json") << edited(fixture, edit).dump(2);
    const ModelConfig parsed = load_model_config(dir / "config.json");
    ASSERT_TRUE(parsed.quantization) << fixture;
    EXPECT_TRUE(parsed.quantization->kv_cache_scales) << fixture;
  }
  EXPECT_FALSE(load_model_config((fp8_fixture(kCt) / "config.json").string()).quantization->kv_cache_scales);
}

TEST(Fp8Config, CompressionConfigIsTheOlderSpelling) {
  json config = fixture_config(kCt);
  config["compression_config"] = config["quantization_config"];
  config["compression_config"].erase("quant_method");
  config.erase("quantization_config");
  test::TempDirPath dir("fg_fp8_config");
  std::ofstream(dir / "config.json") << config.dump(2);
  const ModelConfig parsed = load_model_config(dir / "config.json");
  ASSERT_TRUE(parsed.quantization);
  EXPECT_EQ(parsed.quantization->method, "compressed-tensors");
}

// ---- refused checkpoints ----------------------------------------------------------------------

// A copy of fixture `name` in a temporary folder, with `edit` applied to its tensors (given as
// the fixture's own tensors in file order) and to its config.
class EditedCheckpoint {
 public:
  EditedCheckpoint(const std::string& name, const std::function<void(std::vector<NamedTensor>&)>& edit,
                   const std::function<void(json&)>& edit_config = {})
      : dir_("fg_fp8_checkpoint") {
    auto file = SafetensorsFile::open((fp8_fixture(name) / "model.safetensors").string());
    std::vector<NamedTensor> tensors;
    for (const SafetensorsEntry& e : file->header().entries) tensors.push_back({e.name, file->tensor(e)});
    edit(tensors);
    write_safetensors(dir_ / "model.safetensors", tensors);
    json config = fixture_config(name);
    if (edit_config) edit_config(config);
    std::ofstream(dir_ / "config.json") << config.dump(2);
  }
  const std::filesystem::path& path() const { return dir_.path(); }
  std::string load_error() const {
    CpuBackend backend;
    return test::error_of([&] { load_model(dir_.path().string(), LoadOptions{}, backend); });
  }

 private:
  test::TempDirPath dir_;
};

void erase_tensor(std::vector<NamedTensor>& tensors, const std::string& name) {
  std::erase_if(tensors, [&](const NamedTensor& t) { return t.name == name; });
}

Tensor& find_tensor(std::vector<NamedTensor>& tensors, const std::string& name) {
  for (NamedTensor& t : tensors)
    if (t.name == name) return t.tensor;
  throw Error("no tensor " + name);
}

constexpr const char* kQ = "model.layers.0.self_attn.q_proj";

TEST(Fp8Checkpoint, MissingOrUnexpectedScalesAreRefusedNamingTheTensor) {
  {
    EditedCheckpoint c(kCt, [](std::vector<NamedTensor>& t) { erase_tensor(t, std::string(kQ) + ".weight_scale"); });
    const std::string m = c.load_error();
    EXPECT_MENTIONS(m, "missing tensor 'model.layers.0.self_attn.q_proj.weight_scale'");
  }
  {
    EditedCheckpoint c(kFp8, [](std::vector<NamedTensor>& t) { erase_tensor(t, std::string(kQ) + ".input_scale"); });
    const std::string m = c.load_error();
    EXPECT_MENTIONS(m, "missing tensor 'model.layers.0.self_attn.q_proj.input_scale'");
    EXPECT_MENTIONS(m, "static activation scales");
  }
  {
    // A dynamic checkpoint with a static input scale: which scale would apply is unclear, so refuse.
    static float one = 1.0f;
    EditedCheckpoint c(kCt, [](std::vector<NamedTensor>& t) {
      t.push_back({std::string(kQ) + ".input_scale", Tensor(&one, DType::kF32, {1})});
    });
    EXPECT_MENTIONS(c.load_error(), "unexpected tensor 'model.layers.0.self_attn.q_proj.input_scale'");
  }
  {
    // Per-channel scales must be [out, 1]; a per-tensor one in a 'channel' checkpoint is refused.
    static uint16_t bf16_one = float_to_bf16(1.0f);
    EditedCheckpoint c(kCt, [](std::vector<NamedTensor>& t) {
      find_tensor(t, std::string(kQ) + ".weight_scale") = Tensor(&bf16_one, DType::kBF16, {1});
    });
    const std::string m = c.load_error();
    EXPECT_MENTIONS(m, "'model.layers.0.self_attn.q_proj.weight_scale' has shape [1]");
    EXPECT_MENTIONS(m, "[64, 1]");
  }
  {
    static float negative = -1.0f;
    EditedCheckpoint c(kFp8, [](std::vector<NamedTensor>& t) {
      find_tensor(t, std::string(kQ) + ".weight_scale") = Tensor(&negative, DType::kF32, {});
    });
    EXPECT_MENTIONS(c.load_error(), "'model.layers.0.self_attn.q_proj.weight_scale' holds -1");
  }
}

TEST(Fp8Checkpoint, WeightDtypesMustMatchWhatTheConfigQuantizes) {
  {
    // The config quantizes q_proj but the checkpoint holds it in bf16.
    static std::vector<uint16_t> bf16(64 * 64, float_to_bf16(0.5f));
    EditedCheckpoint c(kCt, [](std::vector<NamedTensor>& t) {
      find_tensor(t, std::string(kQ) + ".weight") = Tensor(bf16.data(), DType::kBF16, {64, 64});
    });
    const std::string m = c.load_error();
    EXPECT_MENTIONS(m, "'model.layers.0.self_attn.q_proj.weight' has dtype BF16");
    EXPECT_MENTIONS(m, "F8_E4M3 expected");
  }
  {
    // The config's ignore list leaves q_proj unquantized but the checkpoint holds it in FP8.
    EditedCheckpoint c(kCt, [](std::vector<NamedTensor>& t) { erase_tensor(t, std::string(kQ) + ".weight_scale"); },
                       [](json& j) { j["quantization_config"]["ignore"].push_back(kQ); });
    EXPECT_MENTIONS(c.load_error(), "'model.layers.0.self_attn.q_proj.weight' is F8_E4M3 but config.json quantizes "
                                    "no such layer");
  }
  {
    // An FP8 checkpoint without its quantization_config.
    EditedCheckpoint c(kCt, [](std::vector<NamedTensor>&) {}, [](json& j) { j.erase("quantization_config"); });
    EXPECT_MENTIONS(c.load_error(), "is F8_E4M3 but config.json quantizes no such layer");
  }
}

// E5M2 weights are not read at all: the safetensors reader refuses the dtype by name.
TEST(Fp8Checkpoint, E5M2IsRefusedByName) {
  EditedCheckpoint c(kCt, [](std::vector<NamedTensor>&) {});
  const std::string path = c.path() / "model.safetensors";
  std::string bytes = test::read_file_bytes(path);
  const size_t at = bytes.find("F8_E4M3");  // the same length, so the header stays valid
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 7, "F8_E5M2");
  test::write_file_bytes(path, bytes);
  EXPECT_MENTIONS(c.load_error(), "unsupported dtype 'F8_E5M2'");
}

}  // namespace
}  // namespace fg
