// tests/test_gguf_files.cpp — whole GGUF files written by the `gguf` Python package's GGUFWriter
// (scripts/gguf/make_gguf_fixtures.py), read by fullgraph and checked against what gguf-py's
// GGUFReader and dequantizer say they hold: every key with its type and value, every tensor's
// type, shape, offset, size and values.
//
// Values are compared exactly: the JSON holds each fp32 value as the shortest decimal that
// round-trips a double, which the float32 value is exactly, and dequantization is deterministic
// arithmetic that fullgraph does in gguf-py's order (see test_gguf_dequant.cpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf_test_support.h"
#include "model/gguf.h"
#include "model/gguf_dequant.h"
#include "test_support.h"

namespace fg {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

json read_json(const std::string& name) {
  return json::parse(test::read_file_bytes(test::gguf_fixtures() / name));
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Compares one key with gguf-py's description of it.
void expect_key(const GgufMetadata& m, const json& want) {
  const std::string key = want["key"];
  SCOPED_TRACE(key);
  const GgufValue& v = m.at(key);
  EXPECT_EQ(gguf_value_type_name(v.type), lower(want["type"]));
  const bool array = v.is_array();
  const std::string type = lower(array ? want["element_type"] : want["type"]);
  if (array) {
    EXPECT_EQ(gguf_value_type_name(v.element_type), type);
    EXPECT_EQ(v.count, want["values"].size());
  }
  const json& values = array ? want["values"] : json::array({want["value"]});
  if (type == "string") {
    std::vector<std::string> got = array ? m.get_string_array(key) : std::vector<std::string>{m.get_string(key)};
    EXPECT_EQ(got, values.get<std::vector<std::string>>());
  } else if (type == "bool") {
    std::vector<bool> got = array ? m.get_bool_array(key) : std::vector<bool>{m.get_bool(key)};
    EXPECT_EQ(got, values.get<std::vector<bool>>());
  } else if (type == "float32" || type == "float64") {
    std::vector<double> got = array ? m.get_float_array(key) : std::vector<double>{m.get_float(key)};
    EXPECT_EQ(got, values.get<std::vector<double>>());
  } else if (values.size() > 0 && values.back().is_number_unsigned() &&
             values.back().get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    // A uint64 beyond int64 (test.u64, test.array.u64): refused by the integer lookups, by name.
    EXPECT_THAT(test::error_of([&] { array ? (void)m.get_int_array(key) : (void)m.get_int(key); }),
                HasSubstr("larger than 2^63 - 1"));
  } else {
    std::vector<int64_t> got = array ? m.get_int_array(key) : std::vector<int64_t>{m.get_int(key)};
    EXPECT_EQ(got, values.get<std::vector<int64_t>>());
  }
}

void expect_file(const std::string& name) {
  const json want = read_json(name + ".json");
  auto file = GgufFile::open((test::gguf_fixtures() / (name + ".gguf")).string());
  const GgufHeader& h = file->header();
  EXPECT_EQ(h.version, want["version"].get<uint32_t>());
  EXPECT_EQ(h.alignment, want["alignment"].get<uint64_t>());
  EXPECT_EQ(h.data_offset, want["data_offset"].get<uint64_t>());

  std::vector<std::string> keys;
  for (const json& k : want["metadata"]) keys.push_back(k["key"]);
  EXPECT_EQ(h.metadata.keys(), keys);  // all of them, in file order
  for (const json& k : want["metadata"]) expect_key(h.metadata, k);

  ASSERT_EQ(h.tensors.size(), want["tensors"].size());
  for (size_t i = 0; i < h.tensors.size(); ++i) {
    const GgufTensorInfo& t = h.tensors[i];
    const json& w = want["tensors"][i];
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.name, w["name"].get<std::string>());
    EXPECT_EQ(ggml_type_name(t.type), w["type"].get<std::string>());
    EXPECT_EQ(t.shape, w["shape"].get<std::vector<int64_t>>());
    std::vector<int64_t> ne(t.shape.rbegin(), t.shape.rend());
    EXPECT_EQ(ne, w["ne"].get<std::vector<int64_t>>());
    EXPECT_EQ(t.offset, w["offset"].get<uint64_t>());
    EXPECT_EQ(t.size, w["size"].get<uint64_t>());
    if (!w.contains("values")) {
      // gguf-py has no dequantizer for these (or they are integers): fullgraph refuses them by name.
      EXPECT_THAT(test::error_of([&] { dequantize_tensor(t, file->bytes(t)); }),
                  HasSubstr("has ggml type " + w["type"].get<std::string>() + ", which fullgraph cannot dequantize"));
      continue;
    }
    std::vector<float> got = dequantize_tensor(t, file->bytes(t));
    std::vector<float> expected;
    for (const json& v : w["values"]) expected.push_back(static_cast<float>(v.get<double>()));
    EXPECT_EQ(got, expected);
  }
}

TEST(GgufFiles, SmallFileFromGgufPy) {
  expect_file("small");
  auto file = GgufFile::open((test::gguf_fixtures() / "small.gguf").string());
  const GgufMetadata& m = file->metadata();
  EXPECT_EQ(m.get_string("general.name"), "tiny ünïcødé 🦙");
  EXPECT_EQ(m.get_int("test.u32"), 4000000000);
  EXPECT_EQ(m.get_float("test.f32"), static_cast<double>(0.1f));
  EXPECT_EQ(m.get_string_array("test.array.string")[3], "<|im_start|>");
  // Row-major: the Q4_1 tensor written as numpy shape (2, 3, 32) is ne = [32, 3, 2] in the file.
  EXPECT_EQ(file->tensor("q4_1.cube").shape, (std::vector<int64_t>{2, 3, 32}));
  EXPECT_EQ(file->tensor("f32.four_dims").shape, (std::vector<int64_t>{2, 1, 3, 4}));
}

TEST(GgufFiles, CustomAlignmentFromGgufPy) {
  expect_file("aligned64");
  auto file = GgufFile::open((test::gguf_fixtures() / "aligned64.gguf").string());
  EXPECT_EQ(file->header().alignment, 64u);
  EXPECT_EQ(file->tensor("second").offset, 64u);  // "first" holds 12 bytes, padded to 64
}

// The same bytes as version 2, whose layout GGUF v3 did not change.
TEST(GgufFiles, VersionTwoOfTheSameFile) {
  std::string bytes = test::read_file_bytes(test::gguf_fixtures() / "small.gguf");
  bytes[4] = 2;
  GgufHeader h = parse_gguf(test::as_image(bytes), "small-v2.gguf");
  EXPECT_EQ(h.version, 2u);
  EXPECT_EQ(h.tensors.size(), 9u);
}

}  // namespace
}  // namespace fg
