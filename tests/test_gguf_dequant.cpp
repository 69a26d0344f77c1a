// tests/test_gguf_dequant.cpp — ggml's block formats against the `gguf` Python package, and the
// ggml type table against gguf-py's (references by scripts/gguf/make_dequant_reference.py).
//
// The comparison is exact, bit for bit. Each dequantized value is at most two rounded fp32
// operations on exactly representable inputs: q * d, q * d + m, or (d * sc) * q - dmin * m, where
// the scale products d * sc and dmin * m are themselves exact (an f16's 11-bit significand times a
// 6- or 8-bit integer fits in fp32's 24 bits) and q is a small integer. There is no accumulation
// across values, IEEE 754 rounds each operation the same way everywhere, and fullgraph performs
// them in gguf-py's (and ggml's) order without fused multiply-adds, so any difference at all is a
// bug; a tolerance would only hide a wrong offset, a wrong bit or a fused q * d + m. NaNs compare
// by their bits too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf_test_support.h"
#include "model/ggml_type.h"
#include "model/gguf_dequant.h"
#include "test_support.h"

namespace fg {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using nlohmann::json;

struct Reference {
  GgmlType type;
  std::string name;
  std::string raw;              // the blocks
  std::vector<uint32_t> bits;   // gguf-py's fp32 values, as bit patterns
};

std::vector<Reference> references() {
  const auto dir = test::gguf_fixtures() / "dequant";
  const json index = json::parse(test::read_file_bytes(dir / "index.json"));
  std::vector<Reference> out;
  for (const json& t : index["types"]) {
    Reference r;
    r.name = t["type"];
    r.type = ggml_type_info(t["id"].get<uint32_t>()).value().type;
    std::string lower = r.name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.raw = test::read_file_bytes(dir / (lower + ".bin"));
    const std::string f32 = test::read_file_bytes(dir / (lower + ".f32"));
    r.bits.resize(f32.size() / 4);
    std::memcpy(r.bits.data(), f32.data(), f32.size());
    EXPECT_EQ(r.bits.size(), t["elements"].get<size_t>()) << r.name;
    EXPECT_EQ(r.raw.size(), t["bytes"].get<size_t>()) << r.name;
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<uint32_t> bits_of(const std::vector<float>& values) {
  std::vector<uint32_t> out(values.size());
  std::memcpy(out.data(), values.data(), values.size() * 4);
  return out;
}

TEST(GgufDequant, EveryHandledTypeHasAReference) {
  std::set<std::string> covered;
  for (const Reference& r : references()) covered.insert(r.name);
  EXPECT_EQ(covered, (std::set<std::string>{"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K",
                                            "Q5_K", "Q6_K"}));
}

TEST(GgufDequant, MatchesGgufPyBitForBit) {
  for (const Reference& r : references()) {
    SCOPED_TRACE(r.name);
    ASSERT_TRUE(can_dequantize(r.type));
    std::vector<float> out(r.bits.size());
    dequantize_to_f32(r.type, test::as_image(r.raw), out, r.name);
    std::vector<uint32_t> got = bits_of(out);
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], r.bits[i]) << "element " << i << ": " << out[i] << " vs gguf-py's "
                                   << std::bit_cast<float>(r.bits[i]);
    }
  }
}

// Split across threads, each element's arithmetic is the same: the pool only changes who does it.
TEST(GgufDequant, ThreadPoolGivesTheSameBits) {
  ThreadPool pool(4);
  for (const Reference& r : references()) {
    SCOPED_TRACE(r.name);
    std::string raw;
    for (int i = 0; i < 300; ++i) raw += r.raw;  // enough blocks to be split
    std::vector<float> alone(r.bits.size() * 300), split(alone.size());
    dequantize_to_f32(r.type, test::as_image(raw), alone, r.name);
    dequantize_to_f32(r.type, test::as_image(raw), split, r.name, &pool);
    const std::vector<uint32_t> bits = bits_of(split);
    EXPECT_EQ(bits_of(alone), bits);
    for (size_t i = 0; i < r.bits.size(); ++i) ASSERT_EQ(bits[i + r.bits.size() * 299], r.bits[i]);
  }
}

// The bf16 path rounds each fp32 result once, to nearest even; BF16 bytes are copied as they are.
TEST(GgufDequant, Bf16IsTheRoundedF32) {
  ThreadPool pool(3);
  for (const Reference& r : references()) {
    SCOPED_TRACE(r.name);
    std::string raw;
    for (int i = 0; i < 100; ++i) raw += r.raw;
    std::vector<float> f32(r.bits.size() * 100);
    std::vector<uint16_t> bf16(f32.size()), pooled(f32.size());
    dequantize_to_f32(r.type, test::as_image(raw), f32, r.name);
    dequantize_to_bf16(r.type, test::as_image(raw), bf16, r.name);
    dequantize_to_bf16(r.type, test::as_image(raw), pooled, r.name, &pool);
    EXPECT_EQ(bf16, pooled);
    for (size_t i = 0; i < f32.size(); ++i) {
      if (r.type == GgmlType::kBF16) {
        uint16_t stored;
        std::memcpy(&stored, raw.data() + 2 * i, 2);
        ASSERT_EQ(bf16[i], stored) << i;
      } else {
        ASSERT_EQ(bf16[i], float_to_bf16(f32[i])) << i;
      }
    }
  }
}

TEST(GgufDequant, OtherTypesAreRefusedByName) {
  const std::set<GgmlType> handled = {GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0,
                                      GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                                      GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K};
  int refused = 0;
  for (uint32_t id = 0; id < 64; ++id) {
    std::optional<GgmlTypeInfo> info = ggml_type_info(id);
    if (!info) continue;
    EXPECT_EQ(can_dequantize(info->type), handled.count(info->type) == 1) << info->name;
    if (handled.count(info->type)) continue;
    ++refused;
    const std::string message = test::error_of([&] {
      std::vector<float> out(static_cast<size_t>(info->block_size));
      std::string raw(static_cast<size_t>(info->block_bytes), '\0');
      dequantize_to_f32(info->type, test::as_image(raw), out, "model.gguf: tensor 'blk.0.attn_q.weight'");
    });
    EXPECT_THAT(message, AllOf(HasSubstr("model.gguf: tensor 'blk.0.attn_q.weight' has ggml type " +
                                         std::string(info->name) + ", which fullgraph cannot dequantize"),
                               HasSubstr("Q4_K")));
  }
  EXPECT_EQ(refused, 34 - 11);
  EXPECT_THAT(test::error_of([] { check_dequantizable(GgmlType::kIQ4_XS, "tensor 'w'"); }),
              HasSubstr("tensor 'w' has ggml type IQ4_XS"));
  EXPECT_THAT(test::error_of([] { check_dequantizable(GgmlType::kQ2_K, "tensor 'w'"); }), HasSubstr("type Q2_K"));
}

TEST(GgufDequant, SizesAreChecked) {
  std::string raw(2 * 18, '\0');
  std::vector<float> out(48);
  EXPECT_THAT(test::error_of([&] { dequantize_to_f32(GgmlType::kQ4_0, test::as_image(raw), out, "tensor 'w'"); }),
              HasSubstr("tensor 'w': 48 elements of Q4_0 are not a whole number of its 32-element blocks"));
  out.resize(96);
  EXPECT_THAT(test::error_of([&] { dequantize_to_f32(GgmlType::kQ4_0, test::as_image(raw), out, "tensor 'w'"); }),
              HasSubstr("tensor 'w': 36 bytes of Q4_0 given for 96 elements, which take 54 bytes (3 blocks of 18 "
                        "bytes)"));
  std::vector<uint16_t> half(64);
  EXPECT_NO_THROW(dequantize_to_bf16(GgmlType::kQ4_0, test::as_image(raw), half, "tensor 'w'"));
  std::vector<float> none;
  EXPECT_NO_THROW(dequantize_to_f32(GgmlType::kQ6_K, {}, none, "empty"));
}

// fullgraph's table of ggml types is gguf-py's: same ids, names and block layouts, none missing.
TEST(GgmlTypes, TableMatchesGgufPy) {
  const json want = json::parse(test::read_file_bytes(test::gguf_fixtures() / "ggml_types.json"));
  std::set<uint32_t> ids;
  for (const json& t : want["types"]) {
    const uint32_t id = t["id"];
    ids.insert(id);
    std::optional<GgmlTypeInfo> info = ggml_type_info(id);
    ASSERT_TRUE(info.has_value()) << t["name"];
    EXPECT_EQ(info->name, t["name"].get<std::string>());
    EXPECT_EQ(info->block_size, t["block_size"].get<int64_t>()) << info->name;
    EXPECT_EQ(info->block_bytes, t["block_bytes"].get<int64_t>()) << info->name;
    EXPECT_EQ(ggml_type_label(id), fmt::format("{} (id {})", info->name, id));
  }
  for (uint32_t id = 0; id < 1000; ++id) {
    if (ggml_type_info(id)) {
      EXPECT_EQ(ids.count(id), 1u) << "fullgraph knows id " << id << ", gguf-py does not";
    }
  }
  EXPECT_EQ(ggml_type_label(33), "Q4_0_8_8 (id 33, removed from ggml)");
  EXPECT_EQ(ggml_type_label(1000), "unknown type id 1000");
  EXPECT_EQ(ggml_bytes(GgmlType::kQ4_K, 512), 288u);
  EXPECT_EQ(ggml_bytes(GgmlType::kF32, uint64_t{1} << 62), std::nullopt);
}

}  // namespace
}  // namespace fg
