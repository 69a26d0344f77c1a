// tests/test_tensor_parallel_weights.cpp — the Megatron split of the fixture models: a rank's
// config view, the TP sizes that are refused (naming the config field), and a rank's weights read
// shard by shard from the checkpoint holding exactly the bytes of its slice of the full tensors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "backend/cpu/cpu_backend.h"
#include "model/model_loader.h"
#include "model/safetensors.h"
#include "model/tensor_parallel.h"
#include "model/weights.h"
#include "runner_test_support.h"
#include "test_support.h"

namespace fg {
namespace {

using ::testing::HasSubstr;

ModelConfig fixture_config(const std::string& name) {
  return load_model_config(test::model_fixture(name) + "/config.json");
}

TEST(TensorParallelConfig, RankViewDividesHeadsAndFeaturesAndKeepsTheVocabulary) {
  const ModelConfig full = fixture_config("tiny-llama");  // 4 heads, 2 KV heads, I 160, V 512
  const ModelConfig c = shard_config(full, {1, 2});
  EXPECT_EQ(c.num_heads, 2);
  EXPECT_EQ(c.num_kv_heads, 1);
  EXPECT_EQ(c.intermediate_size, 80);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.hidden_size, full.hidden_size);
  EXPECT_EQ(first_kv_head(full, {1, 2}), 1);
  // TP 4 over 2 KV heads: each KV head replicated on two consecutive ranks, with its q heads.
  const ModelConfig c4 = shard_config(full, {3, 4});
  EXPECT_EQ(c4.num_heads, 1);
  EXPECT_EQ(c4.num_kv_heads, 1);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(first_kv_head(full, {r, 4}), r / 2) << r;
  EXPECT_EQ(shard_config(full, {0, 1}).num_heads, 4);
}

TEST(TensorParallelConfig, SizesThatDoNotDivideAreRefusedNamingTheField) {
  const ModelConfig rope = fixture_config("tiny-llama3-rope");  // 6 heads, 2 KV heads
  EXPECT_THAT(test::error_of([&] { shard_config(rope, {0, 4}); }),
              HasSubstr("--tensor-parallel-size 4: the model's num_attention_heads = 6 is not divisible by it"));
  ModelConfig odd_kv = fixture_config("tiny-llama");
  odd_kv.num_heads = 12, odd_kv.num_kv_heads = 3;
  EXPECT_THAT(test::error_of([&] { shard_config(odd_kv, {0, 2}); }), HasSubstr("num_key_value_heads = 3"));
  EXPECT_THAT(test::error_of([&] { shard_config(odd_kv, {0, 4}); }), HasSubstr("num_key_value_heads = 3"));
  ModelConfig mlp = fixture_config("tiny-llama");
  mlp.intermediate_size = 162;
  EXPECT_THAT(test::error_of([&] { shard_config(mlp, {0, 4}); }), HasSubstr("intermediate_size = 162"));
  ModelConfig vocab = fixture_config("tiny-llama");
  vocab.vocab_size = 510;
  EXPECT_THAT(test::error_of([&] { shard_config(vocab, {0, 4}); }), HasSubstr("vocab_size = 510"));
  EXPECT_THAT(test::error_of([&] { shard_config(vocab, {0, 0}); }), HasSubstr("at least 1"));
}

// copy_weight_slice over a small tensor: rows and columns.
TEST(TensorParallelWeights, SliceCopiesRowsAndColumns) {
  std::vector<float> full(4 * 6);
  for (size_t i = 0; i < full.size(); ++i) full[i] = static_cast<float>(i);
  std::vector<float> rows(2 * 6), cols(4 * 2);
  copy_weight_slice(full.data(), DType::kF32, {4, 6}, {0, 1, 2}, rows.data());
  copy_weight_slice(full.data(), DType::kF32, {4, 6}, {1, 3, 2}, cols.data());
  EXPECT_EQ(rows, std::vector<float>(full.begin() + 6, full.begin() + 18));
  EXPECT_EQ(cols, (std::vector<float>{3, 4, 9, 10, 15, 16, 21, 22}));
}

// Rank r's loaded tensor `got` equals its slice of the checkpoint's tensor `name`, byte for byte.
void expect_slice_of_checkpoint(const Checkpoint& checkpoint, const ModelConfig& full, const TensorParallelShard& shard,
                                const std::string& name, const Tensor& got) {
  const Tensor t = checkpoint.tensor(name);
  const std::vector<int64_t> shape(t.shape.begin(), t.shape.begin() + t.rank);
  const WeightSlice slice = weight_slice(full, shard, name);
  const std::vector<int64_t> owned = slice_shape(shape, slice);
  ASSERT_EQ(std::vector<int64_t>(got.shape.begin(), got.shape.begin() + got.rank), owned) << name;
  ASSERT_EQ(got.dtype, t.dtype) << name;
  // The reference slice, element by element from the full tensor (independent of copy_weight_slice).
  const size_t element = dtype_size(t.dtype);
  const int64_t cols = shape.size() == 2 ? shape[1] : 1;
  std::vector<char> expected;
  for (int64_t r = 0; r < shape[0]; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const bool mine = slice.whole() || (slice.dim == 0 && r >= slice.begin && r < slice.begin + slice.count) ||
                        (slice.dim == 1 && c >= slice.begin && c < slice.begin + slice.count);
      if (!mine) continue;
      const char* p = static_cast<const char*>(t.data) + (r * cols + c) * element;
      expected.insert(expected.end(), p, p + element);
    }
  ASSERT_EQ(expected.size(), got.nbytes()) << name;
  EXPECT_EQ(std::memcmp(expected.data(), got.data, expected.size()), 0) << name << " rank " << shard.rank;
}

class ShardLoad : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

// Every tensor of every rank: the bytes of its slice, the shapes of the rank's config; a tied LM
// head is the rank's row slice of the (replicated) embedding.
TEST_P(ShardLoad, EveryRanksTensorsAreItsSliceOfTheCheckpoint) {
  const auto& [fixture, size] = GetParam();
  const ModelConfig full = fixture_config(fixture);
  auto checkpoint = std::make_shared<const Checkpoint>(Checkpoint::open(test::model_fixture(fixture)));
  for (int rank = 0; rank < size; ++rank) {
    CpuBackend backend(1);
    const TensorParallelShard shard{rank, size};
    const ModelWeights w = load_weights(full, checkpoint, backend, shard);
    const ModelConfig c = shard_config(full, shard);
    expect_slice_of_checkpoint(*checkpoint, full, shard, "model.embed_tokens.weight", w.embed_tokens);
    expect_slice_of_checkpoint(*checkpoint, full, shard, "model.norm.weight", w.final_norm);
    if (full.tie_word_embeddings) {
      const int64_t rows = full.vocab_size / size;
      EXPECT_EQ(w.lm_head.dim(0), rows);
      EXPECT_EQ(w.lm_head.data, w.embed_tokens.rows(rank * rows, rows).data);
    } else {
      expect_slice_of_checkpoint(*checkpoint, full, shard, "lm_head.weight", w.lm_head);
    }
    for (int64_t l = 0; l < full.num_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      const LayerWeights& L = w.layers[l];
      expect_slice_of_checkpoint(*checkpoint, full, shard, p + "self_attn.q_proj.weight", L.q_proj);
      expect_slice_of_checkpoint(*checkpoint, full, shard, p + "self_attn.k_proj.weight", L.k_proj);
      expect_slice_of_checkpoint(*checkpoint, full, shard, p + "self_attn.v_proj.weight", L.v_proj);
      expect_slice_of_checkpoint(*checkpoint, full, shard, p + "self_attn.o_proj.weight", L.o_proj);
      expect_slice_of_checkpoint(*checkpoint, full, shard, p + "mlp.gate_proj.weight", L.gate_proj);
      expect_slice_of_checkpoint(*checkpoint, full, shard, p + "mlp.up_proj.weight", L.up_proj);
      expect_slice_of_checkpoint(*checkpoint, full, shard, p + "mlp.down_proj.weight", L.down_proj);
      expect_slice_of_checkpoint(*checkpoint, full, shard, p + "input_layernorm.weight", L.input_norm);
      if (full.qkv_bias) {
        expect_slice_of_checkpoint(*checkpoint, full, shard, p + "self_attn.q_proj.bias", L.q_bias);
        expect_slice_of_checkpoint(*checkpoint, full, shard, p + "self_attn.k_proj.bias", L.k_bias);
        expect_slice_of_checkpoint(*checkpoint, full, shard, p + "self_attn.v_proj.bias", L.v_bias);
      }
      if (full.qk_norm) {
        expect_slice_of_checkpoint(*checkpoint, full, shard, p + "self_attn.q_norm.weight", L.q_norm);
        expect_slice_of_checkpoint(*checkpoint, full, shard, p + "self_attn.k_norm.weight", L.k_norm);
      }
      EXPECT_EQ(L.q_proj.dim(0), c.q_size());
      EXPECT_EQ(L.k_proj.dim(0), c.kv_size());
      EXPECT_EQ(L.down_proj.dim(1), c.intermediate_size);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ShardLoad,
                         ::testing::Values(std::tuple<std::string, int>{"tiny-llama", 2},
                                           std::tuple<std::string, int>{"tiny-llama", 4},
                                           std::tuple<std::string, int>{"tiny-llama3-rope", 2},
                                           std::tuple<std::string, int>{"tiny-qwen2", 4},
                                           std::tuple<std::string, int>{"tiny-qwen3", 2}),
                         [](const auto& info) {
                           return test::fixture_test_name(std::get<0>(info.param)) + "_tp" +
                                  std::to_string(std::get<1>(info.param));
                         });

// Sharded dummy weights are the slices of the whole model's dummy weights.
TEST(TensorParallelWeights, DummyShardsAreSlicesOfTheWholeDummyWeights) {
  const ModelConfig full = fixture_config("tiny-qwen2");
  CpuBackend backend(1);
  const ModelWeights whole = dummy_weights(full, backend, 3);
  const ModelWeights shard = dummy_weights(full, backend, 3, {1, 2});
  const Tensor o = whole.layers[0].o_proj;  // [H, q], rank 1 owns columns [q/2, q)
  const int64_t H = o.dim(0), q = o.dim(1);
  ASSERT_EQ(shard.layers[0].o_proj.dim(1), q / 2);
  std::vector<char> expected;
  const size_t element = dtype_size(o.dtype);
  for (int64_t r = 0; r < H; ++r) {
    const char* p = static_cast<const char*>(o.data) + (r * q + q / 2) * element;
    expected.insert(expected.end(), p, p + q / 2 * element);
  }
  EXPECT_EQ(std::memcmp(expected.data(), shard.layers[0].o_proj.data, expected.size()), 0);
}

TEST(TensorParallelWeights, Fp8ModelsAreRefusedByName) {
  ModelConfig full = fixture_config("tiny-llama");
  full.quantization = quantize_at_load_config();
  CpuBackend backend(1);
  EXPECT_THAT(test::error_of([&] { dummy_weights(full, backend, 0, {0, 2}); }),
              HasSubstr("FP8 models (FP8 checkpoints and --quantization fp8) are not sharded yet"));
}

}  // namespace
}  // namespace fg
