// tests/test_safetensors_checkpoint.cpp — the safetensors checkpoint loader: one file or shards
// named by model.safetensors.index.json, and every way an index or its shards can be wrong; each
// error names the tensor, the shard or the folder.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <list>
#include <string>
#include <vector>

#include "model/safetensors.h"
#include "safetensors_test_support.h"

namespace fg {
namespace {

namespace fs = std::filesystem;
using namespace safetensors_test;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class SafetensorsCheckpoint : public ::testing::Test {
 protected:
  // A shard holding one F32 [2] tensor per name, filled with `base`, `base + 1`.
  void Shard(const std::string& file, const std::vector<std::string>& names, float base = 0.0f) {
    std::vector<NamedTensor> tensors;
    for (size_t i = 0; i < names.size(); ++i) {
      data_.push_back({base + 2.0f * static_cast<float>(i), base + 2.0f * static_cast<float>(i) + 1.0f});
      tensors.push_back({names[i], Tensor(data_.back().data(), DType::kF32, {2})});
    }
    fs::create_directories(fs::path(dir_ / file).parent_path());
    write_safetensors(dir_ / file, tensors);
  }
  void Index(const std::string& weight_map) {
    write_bytes(dir_ / "model.safetensors.index.json",
                R"({"metadata": {"total_size": 16}, "weight_map": )" + weight_map + "}\n");
  }
  std::string OpenError() {
    std::string message = error_of([&] { Checkpoint::open(dir_.path().string()); });
    return message;
  }
  TempDir dir_;
  std::list<std::vector<float>> data_;
};

TEST_F(SafetensorsCheckpoint, SingleFile) {
  Shard("model.safetensors", {"a", "b"}, 10.0f);
  Checkpoint checkpoint = Checkpoint::open(dir_.path().string());
  EXPECT_EQ(checkpoint.names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(checkpoint.tensor("b").as<float>()[1], 13.0f);
  EXPECT_EQ(checkpoint.dir(), dir_.path().string());
}

TEST_F(SafetensorsCheckpoint, ShardedReadsCorrectly) {
  Shard("model-00001-of-00002.safetensors", {"embed", "layer0"}, 0.0f);
  Shard("model-00002-of-00002.safetensors", {"layer1", "head"}, 100.0f);
  Index(R"({"embed": "model-00001-of-00002.safetensors", "layer0": "model-00001-of-00002.safetensors",
            "layer1": "model-00002-of-00002.safetensors", "head": "./model-00002-of-00002.safetensors"})");
  Checkpoint checkpoint = Checkpoint::open(dir_.path().string());
  EXPECT_EQ(checkpoint.names(), (std::vector<std::string>{"embed", "head", "layer0", "layer1"}));
  EXPECT_TRUE(checkpoint.contains("head"));
  EXPECT_FALSE(checkpoint.contains("lm_head"));
  EXPECT_EQ(checkpoint.tensor("layer0").as<float>()[0], 2.0f);
  EXPECT_EQ(checkpoint.tensor("head").as<float>()[1], 103.0f);
  EXPECT_TRUE(checkpoint.tensor("layer1").same_shape({2}));
  // The copy shares the mapped files.
  Checkpoint copy = checkpoint;
  EXPECT_EQ(copy.tensor("embed").as<float>()[1], 1.0f);
}

TEST_F(SafetensorsCheckpoint, ShardsInASubfolder) {
  Shard("weights/part1.safetensors", {"a"});
  Index(R"({"a": "weights/part1.safetensors"})");
  EXPECT_TRUE(Checkpoint::open(dir_.path().string()).contains("a"));
}

TEST_F(SafetensorsCheckpoint, AbsentTensorThrowsNamingTensorAndFolder) {
  Shard("model.safetensors", {"a"});
  Checkpoint checkpoint = Checkpoint::open(dir_.path().string());
  EXPECT_THAT(error_of([&] { checkpoint.tensor("model.norm.weight"); }),
              AllOf(HasSubstr("'model.norm.weight'"), HasSubstr(dir_.path().string())));
}

TEST_F(SafetensorsCheckpoint, MissingTensorListedInIndex) {
  Shard("s1.safetensors", {"a"});
  Index(R"({"a": "s1.safetensors", "ghost": "s1.safetensors"})");
  EXPECT_THAT(OpenError(), AllOf(HasSubstr("missing tensor 'ghost'"), HasSubstr("model.safetensors.index.json"),
                                 HasSubstr(dir_ / "s1.safetensors")));
}

TEST_F(SafetensorsCheckpoint, IndexPathWithDotDot) {
  Shard("s1.safetensors", {"a"});
  Index(R"({"a": "../s1.safetensors"})");
  EXPECT_THAT(OpenError(), AllOf(HasSubstr("shard path '../s1.safetensors' of tensor 'a'"), HasSubstr("'..'")));
  Index(R"({"a": "sub/../../s1.safetensors"})");
  EXPECT_THAT(OpenError(), HasSubstr("'..' component"));
}

TEST_F(SafetensorsCheckpoint, AbsoluteIndexPath) {
  Shard("s1.safetensors", {"a"});
  Index(fmt::format(R"({{"a": "{}"}})", dir_ / "s1.safetensors"));
  EXPECT_THAT(OpenError(), AllOf(HasSubstr("of tensor 'a' is absolute"), HasSubstr("index.json")));
}

TEST_F(SafetensorsCheckpoint, SymlinkResolvingOutsideFolder) {
  TempDir outside;
  float value = 1.0f;
  write_safetensors(outside / "secret.safetensors", {{"a", Tensor(&value, DType::kF32, {1})}});
  fs::create_symlink(outside / "secret.safetensors", dir_ / "s1.safetensors");
  Index(R"({"a": "s1.safetensors"})");
  EXPECT_THAT(OpenError(), AllOf(HasSubstr("shard path 's1.safetensors' of tensor 'a' resolves to"),
                                 HasSubstr("outside the folder")));
}

TEST_F(SafetensorsCheckpoint, HubCacheBlobLinksAreFollowed) {
  // models--x/snapshots/<rev>/shard -> ../../blobs/<hash>, as huggingface_hub lays out its cache.
  const fs::path repo = dir_.path() / "models--x";
  const fs::path snapshot = repo / "snapshots" / "abc123";
  fs::create_directories(snapshot);
  fs::create_directories(repo / "blobs");
  float value = 4.0f;
  write_safetensors((repo / "blobs" / "f00d").string(), {{"a", Tensor(&value, DType::kF32, {1})}});
  fs::create_symlink("../../blobs/f00d", snapshot / "model-00001-of-00001.safetensors");
  write_bytes((snapshot / "model.safetensors.index.json").string(),
              R"({"weight_map": {"a": "model-00001-of-00001.safetensors"}})");
  EXPECT_EQ(Checkpoint::open(snapshot.string()).tensor("a").as<float>()[0], 4.0f);
}

TEST_F(SafetensorsCheckpoint, TensorDuplicatedAcrossShards) {
  Shard("s1.safetensors", {"a", "b"});
  Shard("s2.safetensors", {"b", "c"});
  Index(R"({"a": "s1.safetensors", "b": "s1.safetensors", "c": "s2.safetensors"})");
  EXPECT_THAT(OpenError(), AllOf(HasSubstr("tensor 'b' is in two shards"), HasSubstr(dir_ / "s1.safetensors"),
                                 HasSubstr(dir_ / "s2.safetensors")));
}

TEST_F(SafetensorsCheckpoint, TensorInShardButNotInIndex) {
  Shard("s1.safetensors", {"a", "stray"});
  Index(R"({"a": "s1.safetensors"})");
  EXPECT_THAT(OpenError(), AllOf(HasSubstr("tensor 'stray' is in " + (dir_ / "s1.safetensors")),
                                 HasSubstr("model.safetensors.index.json does not list it")));
}

TEST_F(SafetensorsCheckpoint, TensorInADifferentShardThanIndexed) {
  Shard("s1.safetensors", {"a", "c"});
  Shard("s2.safetensors", {"b"});
  Index(R"({"a": "s2.safetensors", "b": "s2.safetensors", "c": "s1.safetensors"})");
  EXPECT_THAT(OpenError(), AllOf(HasSubstr("tensor 'a' is in " + (dir_ / "s1.safetensors")),
                                 HasSubstr("maps it to " + (dir_ / "s2.safetensors"))));
}

TEST_F(SafetensorsCheckpoint, FolderWithNoSafetensors) {
  write_bytes(dir_ / "config.json", "{}");
  EXPECT_THAT(OpenError(), AllOf(HasSubstr(dir_.path().string()), HasSubstr("no safetensors checkpoint"),
                                 HasSubstr("model.safetensors.index.json"), HasSubstr("model.safetensors")));
  EXPECT_THAT(error_of([&] { Checkpoint::open(dir_ / "nonexistent"); }),
              AllOf(HasSubstr("nonexistent"), HasSubstr("not a checkpoint folder")));
}

TEST_F(SafetensorsCheckpoint, MissingShardFile) {
  Shard("s1.safetensors", {"a"});
  Index(R"({"a": "s1.safetensors", "b": "s9.safetensors"})");
  EXPECT_THAT(OpenError(), AllOf(HasSubstr("tensor 'b'"), HasSubstr("s9.safetensors does not exist")));
}

TEST_F(SafetensorsCheckpoint, MalformedIndex) {
  Shard("s1.safetensors", {"a"});
  write_bytes(dir_ / "model.safetensors.index.json", R"({"weight_map": {"a": "s1.safetensors",)");
  EXPECT_THAT(OpenError(), AllOf(HasSubstr("index.json is not valid JSON")));
  write_bytes(dir_ / "model.safetensors.index.json", R"({"metadata": {}})");
  EXPECT_THAT(OpenError(), HasSubstr("has no 'weight_map'"));
  Index(R"({"a": "s1.safetensors", "a": "s2.safetensors"})");
  EXPECT_THAT(OpenError(), HasSubstr("duplicate key 'a' inside 'weight_map'"));
  Index(R"({"a": 3})");
  EXPECT_THAT(OpenError(), HasSubstr("entry of tensor 'a' is 3 (number), not a shard file name"));
  Index(R"({"a": ""})");
  EXPECT_THAT(OpenError(), HasSubstr("is empty"));
}

TEST_F(SafetensorsCheckpoint, MalformedShardNamesTheShard) {
  write_bytes(dir_ / "s1.safetensors", raw_file("{}", zeros(4)));
  Index(R"({})");
  EXPECT_NO_THROW(Checkpoint::open(dir_.path().string()));  // an unlisted shard is never opened
  Index(R"({"a": "s1.safetensors"})");
  EXPECT_THAT(OpenError(), AllOf(HasSubstr(dir_ / "s1.safetensors"), HasSubstr("4 trailing bytes")));
}

// ---- the real fixtures from Hugging Face ----

TEST(SafetensorsFixtures, TinyQwen3Model) {
  auto file = SafetensorsFile::open(FULLGRAPH_TESTDATA "/models/tiny-qwen3/model.safetensors");
  EXPECT_EQ(file->header().entries.size(), 36u);
  EXPECT_EQ(file->header().metadata.at("format"), "pt");
  const SafetensorsEntry* embed = file->find("model.embed_tokens.weight");
  ASSERT_NE(embed, nullptr);
  Tensor t = file->tensor(*embed);
  EXPECT_EQ(t.dtype, DType::kBF16);
  EXPECT_TRUE(t.same_shape({320, 64}));
  EXPECT_EQ(bf16_to_float(t.as<uint16_t>()[0]), 0.171875f);  // read with Python from the same file
  float max_abs = 0.0f;
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = bf16_to_float(t.as<uint16_t>()[i]);
    ASSERT_TRUE(std::isfinite(v)) << i;
    max_abs = std::max(max_abs, std::fabs(v));
  }
  EXPECT_GT(max_abs, 0.01f);
  EXPECT_LT(max_abs, 10.0f);
}

TEST(SafetensorsFixtures, TinyQwen3Reference) {
  auto file = SafetensorsFile::open(FULLGRAPH_TESTDATA "/models/tiny-qwen3/reference.safetensors");
  EXPECT_EQ(file->header().entries.size(), 12u);
  Tensor logits = file->tensor(*file->find("prompt_3.logits"));
  EXPECT_EQ(logits.dtype, DType::kF32);
  EXPECT_TRUE(logits.same_shape({130, 320}));
  for (int64_t i = 0; i < logits.numel(); ++i) ASSERT_TRUE(std::isfinite(logits.as<float>()[i])) << i;
  Tensor ids = file->tensor(*file->find("prompt_3.input_ids"));
  EXPECT_EQ(ids.dtype, DType::kI32);
  EXPECT_TRUE(ids.same_shape({130}));
  EXPECT_EQ(ids.as<int32_t>()[0], 125);
  for (int64_t i = 0; i < ids.numel(); ++i) {
    EXPECT_GE(ids.as<int32_t>()[i], 0);
    EXPECT_LT(ids.as<int32_t>()[i], 320);
  }
  EXPECT_TRUE(file->tensor(*file->find("prompt_0.greedy")).same_shape({16}));
}

TEST(SafetensorsFixtures, EveryFixtureFileAndFolderOpens) {
  int files = 0;
  for (const auto& item : fs::recursive_directory_iterator(FULLGRAPH_TESTDATA)) {
    if (item.path().extension() != ".safetensors") continue;
    SCOPED_TRACE(item.path().string());
    auto file = SafetensorsFile::open(item.path().string());
    EXPECT_FALSE(file->header().entries.empty());
    for (const SafetensorsEntry& entry : file->header().entries) EXPECT_TRUE(file->tensor(entry).defined());
    if (item.path().filename() == "model.safetensors") {
      Checkpoint checkpoint = Checkpoint::open(item.path().parent_path().string());
      EXPECT_EQ(checkpoint.names().size(), file->header().entries.size());
    }
    ++files;
  }
  EXPECT_GE(files, 10);
}

}  // namespace
}  // namespace fg
