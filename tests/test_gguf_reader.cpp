// tests/test_gguf_reader.cpp — the GGUF reader on hand-made images, valid and broken.
//
// Each broken image breaks exactly one rule of a small valid one, and each test checks that the
// error names the file, the key or tensor, and the numbers, since that message is all a user sees
// of a bad download. The valid image ends exactly where its last tensor's bytes end, so every
// strict prefix of it is a truncated file that must be refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf_test_support.h"
#include "model/gguf.h"
#include "test_support.h"

namespace fg {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using test::gguf_array;
using test::gguf_kv;
using test::gguf_string;
using test::GgufImage;
using test::kv_string;
using test::kv_u32;
using test::le32;
using test::le64;
using test::tensor_info;
using V = GgufValueType;

constexpr uint32_t kF32 = 0;
constexpr uint32_t kQ4_0 = 2;
constexpr uint32_t kQ8_0 = 8;
constexpr uint64_t kQ8Row = 34;  // bytes of one 32-element Q8_0 block

std::string floats(std::initializer_list<float> values) {
  std::string out;
  for (float v : values) out.append(reinterpret_cast<const char*>(&v), sizeof(v));
  return out;
}

// Two keys and three tensors: "a" F32 [4] at 0, "b" Q8_0 2×32 at 32, "e" empty at 0.
GgufImage valid_image() {
  GgufImage img;
  img.kv(kv_string("general.architecture", "llama"));
  img.kv(gguf_kv("tokenizer.ggml.tokens", V::kArray,
                 gguf_array(V::kString, 3, gguf_string("a") + gguf_string("bc") + gguf_string(""))));
  img.kv(gguf_kv("test.flags", V::kArray, gguf_array(V::kBool, 2, std::string("\x01\x00", 2))));
  img.tensor(tensor_info("a", {4}, kF32, 0));
  img.tensor(tensor_info("b", {32, 2}, kQ8_0, 32));
  img.tensor(tensor_info("e", {0, 7}, kF32, 0));
  std::string block(kQ8Row, '\0');
  block[1] = 0x3c;  // d = 1.0 in f16
  for (int i = 0; i < 32; ++i) block[2 + i] = static_cast<char>(i - 16);
  img.data = floats({1, 2, 3, 4}) + std::string(16, '\0') + block + block;
  return img;
}

GgufHeader parse(const std::string& bytes) { return parse_gguf(test::as_image(bytes), "img.gguf"); }

// The error of parsing `bytes`, which must name the image.
std::string parse_error(const std::string& bytes) {
  std::string message = test::error_of([&] { parse(bytes); });
  EXPECT_THAT(message, HasSubstr("img.gguf"));
  return message;
}

TEST(GgufReader, ReadsHandMadeImage) {
  const std::string bytes = valid_image().bytes();
  GgufHeader h = parse(bytes);
  EXPECT_EQ(h.version, 3u);
  EXPECT_EQ(h.alignment, 32u);
  EXPECT_EQ(h.data_offset % 32, 0u);
  EXPECT_EQ(h.data_offset + h.data_size, bytes.size());
  ASSERT_EQ(h.metadata.size(), 3u);
  EXPECT_EQ(h.metadata.keys(),
            (std::vector<std::string>{"general.architecture", "tokenizer.ggml.tokens", "test.flags"}));
  EXPECT_EQ(h.metadata.get_string("general.architecture"), "llama");
  EXPECT_EQ(h.metadata.get_string_array("tokenizer.ggml.tokens"), (std::vector<std::string>{"a", "bc", ""}));
  EXPECT_EQ(h.metadata.get_bool_array("test.flags"), (std::vector<bool>{true, false}));
  ASSERT_EQ(h.tensors.size(), 3u);
  EXPECT_EQ(h.tensors[0].name, "a");
  EXPECT_EQ(h.tensors[0].shape, std::vector<int64_t>{4});
  EXPECT_EQ(h.tensors[0].size, 16u);
  EXPECT_EQ(h.tensors[1].type, GgmlType::kQ8_0);
  EXPECT_EQ(h.tensors[1].shape, (std::vector<int64_t>{2, 32}));  // ne = [32, 2], outermost first
  EXPECT_EQ(h.tensors[1].row_length(), 32);
  EXPECT_EQ(h.tensors[1].offset, 32u);
  EXPECT_EQ(h.tensors[1].size, 2 * kQ8Row);
  EXPECT_EQ(h.tensors[2].shape, (std::vector<int64_t>{7, 0}));
  EXPECT_EQ(h.tensors[2].numel(), 0);
  EXPECT_EQ(h.tensors[2].size, 0u);
}

TEST(GgufReader, VersionTwoHasTheSameLayout) {
  GgufImage img = valid_image();
  img.version = 2;
  EXPECT_EQ(parse(img.bytes()).version, 2u);
}

TEST(GgufReader, FileWithoutTensorsMayEndBeforeThePadding) {
  GgufImage img;
  img.kv(kv_u32("a.b", 7));
  std::string bytes = img.bytes();
  bytes.resize(4 + 4 + 8 + 8 + gguf_kv("a.b", V::kU32, le32(7)).size());  // as ggml accepts it
  GgufHeader h = parse(bytes);
  EXPECT_EQ(h.data_size, 0u);
  EXPECT_EQ(h.metadata.get_int("a.b"), 7);
}

TEST(GgufReader, EmptyArrayIsRead) {
  GgufImage img;
  img.kv(gguf_kv("empty", V::kArray, gguf_array(V::kString, 0, "")));
  img.kv(gguf_kv("none", V::kArray, gguf_array(V::kF32, 0, "")));
  GgufHeader h = parse(img.bytes());
  EXPECT_TRUE(h.metadata.get_string_array("empty").empty());
  EXPECT_TRUE(h.metadata.get_float_array("none").empty());
  EXPECT_EQ(h.metadata.at("none").describe(), "array of 0 float32");
}

TEST(GgufReader, EveryTruncationIsRefused) {
  const std::string bytes = valid_image().bytes();
  for (size_t n = 0; n < bytes.size(); ++n) {
    try {
      parse(bytes.substr(0, n));
      ADD_FAILURE() << "a prefix of " << n << " of " << bytes.size() << " bytes was accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("img.gguf")) << n;
    }
  }
}

TEST(GgufReader, TruncationMessagesSayWhere) {
  const std::string bytes = valid_image().bytes();
  EXPECT_THAT(parse_error(bytes.substr(0, 3)), HasSubstr("too short for the 4-byte GGUF magic"));
  EXPECT_THAT(parse_error(bytes.substr(0, 6)),
              AllOf(HasSubstr("truncated"), HasSubstr("the version"), HasSubstr("needs 4 bytes at byte 4")));
  EXPECT_THAT(parse_error(bytes.substr(0, bytes.size() - 1)),
              AllOf(HasSubstr("truncated"), HasSubstr("tensor 'b'"), HasSubstr("Q8_0"), HasSubstr("[2, 32]"),
                    HasSubstr("needs 68 bytes")));
}

TEST(GgufReader, BadMagic) {
  std::string bytes = valid_image().bytes();
  bytes[3] = 'X';
  EXPECT_THAT(parse_error(bytes), AllOf(HasSubstr("not a GGUF file"), HasSubstr("47 47 55 58")));
}

TEST(GgufReader, UnsupportedVersions) {
  GgufImage img = valid_image();
  img.version = 1;
  EXPECT_THAT(parse_error(img.bytes()), AllOf(HasSubstr("GGUF version 1 is not supported"), HasSubstr("2 and 3")));
  img.version = 4;
  EXPECT_THAT(parse_error(img.bytes()), HasSubstr("GGUF version 4 is not supported (supported: 2 and 3)"));
  img.version = 0x03000000;
  EXPECT_THAT(parse_error(img.bytes()), HasSubstr("big-endian"));
}

TEST(GgufReader, StringLengthPastTheEnd) {
  GgufImage img;
  img.kv(gguf_kv("general.name", V::kString, le64(1000) + "abc"));
  EXPECT_THAT(parse_error(img.bytes()),
              AllOf(HasSubstr("metadata key 'general.name' has length 1000"), HasSubstr("past the end of the file")));
  GgufImage key;
  key.kv(le64(~uint64_t{0}) + std::string(20, 'k'));
  EXPECT_THAT(parse_error(key.bytes()),
              AllOf(HasSubstr("the key of metadata entry #0 has length 18446744073709551615"), HasSubstr("past")));
  GgufImage name;
  name.tensor(le64(500) + "x");
  EXPECT_THAT(parse_error(name.bytes()), HasSubstr("the name of tensor info #0 has length 500"));
}

TEST(GgufReader, HugeArrayCounts) {
  for (V element : {V::kU32, V::kString, V::kBool}) {
    GgufImage img;
    img.kv(gguf_kv("tokenizer.ggml.scores", V::kArray, gguf_array(element, uint64_t{1} << 62, "")));
    EXPECT_THAT(parse_error(img.bytes()),
                AllOf(HasSubstr("metadata key 'tokenizer.ggml.scores' is an array of 4611686018427387904"),
                      HasSubstr(std::string(gguf_value_type_name(element))), HasSubstr("bytes follow")));
  }
  GgufImage element;  // a string element's own length
  element.kv(gguf_kv("t", V::kArray, gguf_array(V::kString, 2, gguf_string("ok") + le64(99))));
  EXPECT_THAT(parse_error(element.bytes()), HasSubstr("element 1 of metadata key 't' has length 99"));
}

TEST(GgufReader, HugeCounts) {
  GgufImage img = valid_image();
  img.tensor_count = uint64_t{1} << 60;
  EXPECT_THAT(parse_error(img.bytes()),
              AllOf(HasSubstr("tensor count 1152921504606846976 cannot be right"), HasSubstr("at least 32 bytes")));
  img = valid_image();
  img.kv_count = ~uint64_t{0};
  EXPECT_THAT(parse_error(img.bytes()), HasSubstr("metadata key/value count 18446744073709551615 cannot be right"));
  GgufImage two;  // one tensor info and its data, but a count of 2: less than 2 × 32 bytes follow
  two.tensor(tensor_info("w", {4}, kF32, 0));
  two.tensor_count = 2;
  two.data = floats({1, 2, 3, 4});
  EXPECT_THAT(parse_error(two.bytes()), HasSubstr("tensor count 2 cannot be right"));
}

TEST(GgufReader, DimensionsWhoseProductOverflows) {
  GgufImage img;
  img.tensor(tensor_info("blk.0.ffn_up.weight", {uint64_t{1} << 32, uint64_t{1} << 32}, kF32, 0));
  EXPECT_THAT(parse_error(img.bytes()), AllOf(HasSubstr("tensor 'blk.0.ffn_up.weight' has shape [4294967296, "
                                                        "4294967296] of F32"),
                                              HasSubstr("does not fit in 63 bits")));
  GgufImage bytes_only;  // the element count fits, the byte count does not
  bytes_only.tensor(tensor_info("w", {uint64_t{1} << 61}, kF32, 0));
  EXPECT_THAT(parse_error(bytes_only.bytes()), HasSubstr("does not fit in 63 bits"));
  GgufImage zero;  // a zero dimension does not hide an overflowing product of the others
  zero.tensor(tensor_info("z", {0, uint64_t{1} << 40, uint64_t{1} << 40}, kF32, 0));
  EXPECT_THAT(parse_error(zero.bytes()), HasSubstr("tensor 'z' has shape"));
  GgufImage big;
  big.tensor(tensor_info("w", {uint64_t{1} << 63}, kF32, 0));
  EXPECT_THAT(parse_error(big.bytes()), HasSubstr("tensor 'w' has dimension 0 of 9223372036854775808"));
}

TEST(GgufReader, DimensionCount) {
  for (uint32_t n : {0u, 5u}) {
    GgufImage img;
    img.tensor(gguf_string("w") + le32(n) + std::string(8 * n, '\1') + le32(kF32) + le64(0));
    EXPECT_THAT(parse_error(img.bytes()),
                HasSubstr("tensor 'w' has " + std::to_string(n) + " dimensions; GGUF tensors have 1 to 4"));
  }
}

TEST(GgufReader, MisalignedOffset) {
  GgufImage img = valid_image();
  img.tensor_infos.clear();
  img.tensor_count = 0;
  img.tensor(tensor_info("a", {4}, kF32, 4));
  EXPECT_THAT(parse_error(img.bytes()),
              HasSubstr("tensor 'a' has data offset 4, not a multiple of the alignment 32"));
}

TEST(GgufReader, OffsetPastTheEnd) {
  GgufImage img = valid_image();
  img.tensor(tensor_info("far", {4}, kF32, 1024));
  EXPECT_THAT(parse_error(img.bytes()),
              AllOf(HasSubstr("tensor 'far' (F32, shape [4]) at data offset 1024 needs 16 bytes"),
                    HasSubstr("past the end of the data section, which holds 100 bytes")));
  GgufImage wrap = valid_image();  // offset + size overflows 64 bits
  wrap.tensor(tensor_info("wrap", {4}, kF32, ~uint64_t{31}));
  EXPECT_THAT(parse_error(wrap.bytes()), HasSubstr("tensor 'wrap'"));
}

TEST(GgufReader, OverlappingTensors) {
  GgufImage img = valid_image();
  img.tensor(tensor_info("c", {8}, kF32, 0));  // bytes [0, 32) over a's [0, 16)
  EXPECT_THAT(parse_error(img.bytes()),
              AllOf(HasSubstr("tensor 'c' (data bytes [0, 32)) overlaps tensor 'a' (data bytes [0, 16))")));
  GgufImage partial = valid_image();
  partial.tensor(tensor_info("d", {32}, kQ8_0, 64));  // inside b's [32, 100)
  EXPECT_THAT(parse_error(partial.bytes()), HasSubstr("tensor 'd' (data bytes [64, 98)) overlaps tensor 'b'"));
}

TEST(GgufReader, TypesUnknownRemovedAndMisfit) {
  GgufImage img;
  img.tensor(tensor_info("w", {32}, 99, 0));
  EXPECT_THAT(parse_error(img.bytes()), HasSubstr("tensor 'w' has ggml type unknown type id 99"));
  GgufImage removed;
  removed.tensor(tensor_info("w", {32}, 4, 0));
  EXPECT_THAT(parse_error(removed.bytes()), HasSubstr("Q4_2 (id 4, removed from ggml)"));
  GgufImage row;
  row.tensor(tensor_info("w", {16, 2}, kQ4_0, 0));
  EXPECT_THAT(parse_error(row.bytes()),
              HasSubstr("tensor 'w' (Q4_0) has rows of 16 elements (shape [2, 16]), not a multiple of the 32-element "
                        "Q4_0 block"));
}

TEST(GgufReader, Alignment) {
  GgufImage img = valid_image();
  img.alignment = 64;
  img.kv(kv_u32("general.alignment", 64));
  img.tensor_infos.clear();
  img.tensor_count = 0;
  img.tensor(tensor_info("a", {4}, kF32, 0));
  img.tensor(tensor_info("b", {32, 2}, kQ8_0, 64));
  img.data = floats({1, 2, 3, 4}) + std::string(48, '\0') + std::string(2 * kQ8Row, '\0');
  GgufHeader h = parse(img.bytes());
  EXPECT_EQ(h.alignment, 64u);
  EXPECT_EQ(h.data_offset % 64, 0u);

  for (uint32_t bad : {0u, 3u, 48u}) {
    GgufImage b = valid_image();
    b.kv(kv_u32("general.alignment", bad));
    EXPECT_THAT(parse_error(b.bytes()),
                HasSubstr("metadata key 'general.alignment' is " + std::to_string(bad) +
                          "; the alignment must be a nonzero power of two"));
  }
  GgufImage typed = valid_image();
  typed.kv(gguf_kv("general.alignment", V::kI32, le32(32)));
  EXPECT_THAT(parse_error(typed.bytes()), HasSubstr("'general.alignment' is int32, expected uint32"));
}

TEST(GgufReader, DuplicateKeysAndNames) {
  GgufImage img = valid_image();
  img.kv(kv_string("general.architecture", "qwen2"));
  EXPECT_THAT(parse_error(img.bytes()),
              HasSubstr("metadata key 'general.architecture' appears twice (the second time as entry #3)"));
  GgufImage names = valid_image();
  names.tensor(tensor_info("a", {4}, kF32, 128));
  EXPECT_THAT(parse_error(names.bytes()), HasSubstr("tensor 'a' appears twice (tensor infos #0 and #3)"));
}

TEST(GgufReader, ValueTypes) {
  GgufImage nested;
  nested.kv(gguf_kv("n", V::kArray, gguf_array(V::kArray, 1, gguf_array(V::kU8, 1, "x"))));
  EXPECT_THAT(parse_error(nested.bytes()),
              HasSubstr("metadata key 'n' is an array of arrays; nested arrays are not supported"));
  GgufImage unknown;
  unknown.kv(gguf_kv("u", static_cast<V>(13), le32(0)));
  EXPECT_THAT(parse_error(unknown.bytes()), HasSubstr("metadata key 'u' has unknown value type id 13"));
  GgufImage element;
  element.kv(gguf_kv("u", V::kArray, le32(77) + le64(0)));
  EXPECT_THAT(parse_error(element.bytes()), HasSubstr("the elements of metadata key 'u' has unknown value type id 77"));
  GgufImage boolean;
  boolean.kv(gguf_kv("tokenizer.ggml.add_bos_token", V::kBool, "\x02"));
  EXPECT_THAT(parse_error(boolean.bytes()),
              HasSubstr("metadata key 'tokenizer.ggml.add_bos_token' is a bool of value 2; a bool must be 0 or 1"));
  GgufImage bools;
  bools.kv(gguf_kv("b", V::kArray, gguf_array(V::kBool, 3, std::string("\x01\x00\xff", 3))));
  EXPECT_THAT(parse_error(bools.bytes()), HasSubstr("element 2 of metadata key 'b' is a bool of value 255"));
}

TEST(GgufMetadata, TypedLookupsNameKeyAndTypes) {
  GgufImage img;
  img.kv(kv_string("general.architecture", "llama"));
  img.kv(gguf_kv("big", V::kU64, le64(~uint64_t{0})));
  img.kv(gguf_kv("eps", V::kF32, floats({1e-5f})));
  img.kv(gguf_kv("ids", V::kArray, gguf_array(V::kU64, 2, le64(1) + le64(~uint64_t{0}))));
  img.kv(gguf_kv("neg", V::kI8, "\xfe"));
  GgufHeader h = parse(img.bytes());
  const GgufMetadata& m = h.metadata;
  EXPECT_THAT(test::error_of([&] { m.get_int("general.architecture"); }),
              AllOf(HasSubstr("img.gguf"), HasSubstr("metadata key 'general.architecture' is string, expected an "
                                                     "integer")));
  EXPECT_THAT(test::error_of([&] { m.get_string("eps"); }), HasSubstr("'eps' is float32, expected a string"));
  EXPECT_THAT(test::error_of([&] { m.get_float("neg"); }), HasSubstr("'neg' is int8, expected a float32 or float64"));
  EXPECT_THAT(test::error_of([&] { m.get_string_array("ids"); }),
              HasSubstr("'ids' is array of 2 uint64, expected an array of string"));
  EXPECT_THAT(test::error_of([&] { m.get_int_array("general.architecture"); }),
              HasSubstr("is string, expected an array of integers"));
  EXPECT_THAT(test::error_of([&] { m.get_int("big"); }),
              HasSubstr("'big' is the uint64 18446744073709551615, larger than 2^63 - 1"));
  EXPECT_THAT(test::error_of([&] { m.get_int_array("ids"); }), HasSubstr("'ids' element 1 is the uint64"));
  EXPECT_THAT(test::error_of([&] { m.get_bool("missing.key"); }),
              HasSubstr("img.gguf: no metadata key 'missing.key' (5 keys)"));
  EXPECT_EQ(m.get_int("neg"), -2);
  EXPECT_EQ(m.get_float("eps"), static_cast<double>(1e-5f));
  EXPECT_EQ(m.get_int("missing", 42), 42);
  EXPECT_EQ(m.get_string("missing", "x"), "x");
  EXPECT_TRUE(m.get_bool("missing", true));
  EXPECT_EQ(m.get_float("missing", 0.5), 0.5);
  EXPECT_THAT(test::error_of([&] { m.get_int("eps", 3); }), HasSubstr("expected an integer"));
}

TEST(GgufFile, OpensAndMapsTensors) {
  test::TempDirPath dir("gguf_file");
  const std::string path = dir / "model.gguf";
  test::write_file_bytes(path, valid_image().bytes());
  auto file = GgufFile::open(path);
  EXPECT_EQ(file->path(), path);
  const GgufTensorInfo& a = file->tensor("a");
  std::span<const std::byte> bytes = file->bytes(a);
  ASSERT_EQ(bytes.size(), 16u);
  float values[4];
  std::memcpy(values, bytes.data(), sizeof(values));
  EXPECT_EQ(values[3], 4.0f);
  EXPECT_TRUE(file->bytes(file->tensor("e")).empty());
  EXPECT_EQ(file->find("nope"), nullptr);
  EXPECT_THAT(test::error_of([&] { file->tensor("nope"); }),
              AllOf(HasSubstr(path), HasSubstr("no tensor 'nope' in this file (3 tensors)")));
  EXPECT_THAT(test::error_of([&] { GgufFile::open(dir / "absent.gguf"); }),
              AllOf(HasSubstr("cannot open"), HasSubstr("absent.gguf")));
  EXPECT_THAT(test::error_of([&] { GgufFile::open(dir.path().string()); }), HasSubstr("is not a regular file"));
  const std::string empty = dir / "empty.gguf";
  test::write_file_bytes(empty, "");
  EXPECT_THAT(test::error_of([&] { GgufFile::open(empty); }),
              AllOf(HasSubstr(empty), HasSubstr("file is 0 bytes, too short")));
}

}  // namespace
}  // namespace fg
