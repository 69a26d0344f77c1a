// tests/test_safetensors.cpp — the safetensors reader and writer (the checkpoint loader:
// test_safetensors_checkpoint.cpp).
//
// Malformed files are built byte by byte in a temporary folder (8-byte length, header text, data)
// so that each test breaks exactly one rule; every test checks that the error names the file
// and says what is wrong, since that message is all a user sees of a bad download.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <list>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/safetensors.h"
#include "safetensors_test_support.h"

namespace fg {
namespace {

namespace fs = std::filesystem;
using namespace safetensors_test;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class SafetensorsParse : public ::testing::Test {
 protected:
  // Writes `bytes` as a file, opens it, and returns the error, which must name the file.
  std::string OpenError(const std::string& bytes) {
    const std::string path = dir_ / "bad.safetensors";
    write_bytes(path, bytes);
    std::string message = error_of([&] { SafetensorsFile::open(path); });
    EXPECT_THAT(message, HasSubstr(path));
    return message;
  }
  std::shared_ptr<SafetensorsFile> Open(const std::string& bytes) {
    const std::string path = dir_ / "good.safetensors";
    write_bytes(path, bytes);
    return SafetensorsFile::open(path);
  }
  TempDir dir_;
};

const std::string kOneF32 = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";

TEST_F(SafetensorsParse, OpensMinimalFile) {
  auto file = Open(raw_file(padded("{" + kOneF32 + "}"), zeros(8)));
  ASSERT_EQ(file->header().entries.size(), 1u);
  const SafetensorsEntry* a = file->find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, DType::kF32);
  EXPECT_EQ(a->shape, std::vector<int64_t>{2});
  EXPECT_EQ(file->find("b"), nullptr);
  Tensor t = file->tensor(*a);
  EXPECT_TRUE(t.same_shape({2}));
  EXPECT_EQ(t.as<float>()[1], 0.0f);
}

TEST_F(SafetensorsParse, SpacePaddingAfterHeaderIsAccepted) {
  auto file = Open(raw_file("{" + kOneF32 + "}     ", zeros(8)));
  EXPECT_EQ(file->header().data_offset, 8u + 2 + kOneF32.size() + 5);
}

TEST_F(SafetensorsParse, EmptyObjectWithNoDataIsValid) {
  auto file = Open(raw_file("{}", ""));
  EXPECT_TRUE(file->header().entries.empty());
}

TEST_F(SafetensorsParse, EntriesKeepHeaderOrder) {
  auto file = Open(raw_file(R"({"z":{"dtype":"I32","shape":[1],"data_offsets":[4,8]},)"
                            R"("a":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})",
                            zeros(8)));
  ASSERT_EQ(file->header().entries.size(), 2u);
  EXPECT_EQ(file->header().entries[0].name, "z");
  EXPECT_EQ(file->header().entries[1].name, "a");
}

TEST_F(SafetensorsParse, ZeroSizeTensorsAtAnyBoundary) {
  auto file = Open(raw_file(padded(R"({"e0":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)"
                                   R"("e1":{"dtype":"BF16","shape":[3,0],"data_offsets":[4,4]},)"
                                   R"("e2":{"dtype":"I64","shape":[0,5],"data_offsets":[8,8]},)"
                                   R"("x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                   R"("y":{"dtype":"F32","shape":[],"data_offsets":[4,8]}})"),
                            zeros(8)));
  EXPECT_EQ(file->header().entries.size(), 5u);
  EXPECT_EQ(file->tensor(*file->find("y")).rank, 0);
  EXPECT_EQ(file->tensor(*file->find("e1")).numel(), 0);
}

TEST_F(SafetensorsParse, ParsesImageInMemory) {
  std::string bytes = raw_file("{" + kOneF32 + "}", zeros(8));
  SafetensorsHeader header = parse_safetensors(std::as_bytes(std::span(bytes.data(), bytes.size())), "image");
  EXPECT_EQ(header.entries.size(), 1u);
  bytes.pop_back();
  std::string message =
      error_of([&] { parse_safetensors(std::as_bytes(std::span(bytes.data(), bytes.size())), "in-memory image"); });
  EXPECT_THAT(message, AllOf(HasSubstr("in-memory image"), HasSubstr("truncated")));
}

TEST_F(SafetensorsParse, TruncatedData) {
  std::string message = OpenError(raw_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}})", zeros(8)));
  EXPECT_THAT(message, AllOf(HasSubstr("truncated"), HasSubstr("tensor 'a'"), HasSubstr("[0, 12]"),
                             HasSubstr("holds only 8 bytes")));
}

TEST_F(SafetensorsParse, FileShorterThanEightBytes) {
  EXPECT_THAT(OpenError("abc"), AllOf(HasSubstr("file is 3 bytes"), HasSubstr("8-byte header length")));
  EXPECT_THAT(OpenError(""), HasSubstr("file is 0 bytes"));
}

TEST_F(SafetensorsParse, HeaderLengthPastEndOfFile) {
  EXPECT_THAT(OpenError(raw_file("{}", "", 1000)),
              AllOf(HasSubstr("header length 1000 runs past the end of the file"), HasSubstr("file is 10 bytes")));
}

TEST_F(SafetensorsParse, HeaderLengthOverCap) {
  EXPECT_THAT(OpenError(raw_file("{}", "", 100'000'001)),
              AllOf(HasSubstr("header length 100000001"), HasSubstr("over the limit of 100000000 bytes")));
  EXPECT_THAT(OpenError(raw_file("{}", "", ~uint64_t{0})), HasSubstr("over the limit"));
}

TEST_F(SafetensorsParse, NonObjectHeader) {
  EXPECT_THAT(OpenError(raw_file("[1, 2]", "")), AllOf(HasSubstr("not a JSON object"), HasSubstr("'['")));
  EXPECT_THAT(OpenError(raw_file("\"text\"", "")), HasSubstr("not a JSON object"));
  EXPECT_THAT(OpenError(raw_file("", "")), AllOf(HasSubstr("header is empty"), HasSubstr("not a JSON object")));
  EXPECT_THAT(OpenError(raw_file("        ", "")), HasSubstr("header is empty"));
}

TEST_F(SafetensorsParse, InvalidJson) {
  EXPECT_THAT(OpenError(raw_file(R"({"a": })", "")), AllOf(HasSubstr("header is not valid JSON"), HasSubstr("column")));
  EXPECT_THAT(OpenError(raw_file(R"({"a": {"dtype": "F32")", "")), HasSubstr("not valid JSON"));
  EXPECT_THAT(OpenError(raw_file(R"({} x)", "")), HasSubstr("not valid JSON"));
}

TEST_F(SafetensorsParse, InvalidUtf8) {
  EXPECT_THAT(OpenError(raw_file("{\"\xff\": 1}", "")),
              AllOf(HasSubstr("not valid UTF-8"), HasSubstr("0xff"), HasSubstr("offset 2")));
  // Overlong '/', a UTF-16 surrogate, a sequence cut short by the end of the header.
  for (const char* bad : {"\xc0\xaf", "\xed\xa0\x80", "\xe2\x82"}) {
    EXPECT_THAT(OpenError(raw_file(std::string("{\"a\": \"") + bad + "\"}", "")), HasSubstr("not valid UTF-8")) << bad;
  }
  auto file = Open(raw_file("{\"__metadata__\": {\"n\": \"h\xc3\xa9llo \xf0\x9f\x98\x80\"}}", ""));
  EXPECT_EQ(file->header().metadata.at("n"), "h\xc3\xa9llo \xf0\x9f\x98\x80");
}

TEST_F(SafetensorsParse, DuplicateTopLevelKey) {
  EXPECT_THAT(OpenError(raw_file("{" + kOneF32 + "," + kOneF32 + "}", zeros(8))),
              AllOf(HasSubstr("duplicate key 'a'"), HasSubstr("top level")));
  // The same key spelled with an escape is still the same key.
  EXPECT_THAT(OpenError(raw_file(R"({"a":1,"\u0061":2})", "")), HasSubstr("duplicate key 'a'"));
}

TEST_F(SafetensorsParse, DuplicateKeyInsideTensorEntry) {
  EXPECT_THAT(OpenError(raw_file(R"({"w":{"dtype":"F32","dtype":"I32","shape":[2],"data_offsets":[0,8]}})", zeros(8))),
              AllOf(HasSubstr("duplicate key 'dtype'"), HasSubstr("inside 'w'")));
}

TEST_F(SafetensorsParse, DuplicateKeyInsideMetadata) {
  EXPECT_THAT(OpenError(raw_file(R"({"__metadata__":{"format":"pt","format":"np"}})", "")),
              AllOf(HasSubstr("duplicate key 'format'"), HasSubstr("inside '__metadata__'")));
  EXPECT_THAT(OpenError(raw_file(R"({"__metadata__":{},"__metadata__":{}})", "")),
              HasSubstr("duplicate key '__metadata__'"));
}

TEST_F(SafetensorsParse, OverlappingOffsets) {
  EXPECT_THAT(OpenError(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                 R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                 zeros(12))),
              AllOf(HasSubstr("tensor 'b' data_offsets [4, 12] overlap tensor 'a' data_offsets [0, 8]")));
  // A zero-size tensor may sit at a boundary, not inside another tensor.
  EXPECT_THAT(OpenError(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                 R"("z":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
                                 zeros(8))),
              HasSubstr("tensor 'z' data_offsets [4, 4] overlap tensor 'a'"));
}

TEST_F(SafetensorsParse, GappedOffsets) {
  EXPECT_THAT(OpenError(raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                 R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                 zeros(12))),
              AllOf(HasSubstr("gap in the data section"), HasSubstr("bytes [4, 8)"), HasSubstr("tensor 'a'"),
                    HasSubstr("tensor 'b'")));
}

TEST_F(SafetensorsParse, OffsetsNotStartingAtZero) {
  EXPECT_THAT(OpenError(raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", zeros(8))),
              AllOf(HasSubstr("tensor 'a' data_offsets [4, 8] do not start at 0"), HasSubstr("[0, 4)")));
}

TEST_F(SafetensorsParse, TrailingBytesAfterLastTensor) {
  EXPECT_THAT(OpenError(raw_file("{" + kOneF32 + "}", zeros(12))),
              AllOf(HasSubstr("4 trailing bytes"), HasSubstr("holds 12 bytes"), HasSubstr("end at 8")));
  EXPECT_THAT(OpenError(raw_file("{}", zeros(3))), HasSubstr("3 trailing bytes"));
}

TEST_F(SafetensorsParse, TrailingNonSpaceAfterHeaderJson) {
  EXPECT_THAT(OpenError(raw_file("{" + kOneF32 + "}\n", zeros(8))),
              AllOf(HasSubstr("byte 0x0a"), HasSubstr("only spaces may pad the header")));
  EXPECT_THAT(OpenError(raw_file("{" + kOneF32 + "}  \t  ", zeros(8))), HasSubstr("only spaces may pad"));
}

TEST_F(SafetensorsParse, ByteSizeMismatch) {
  const std::string path = dir_ / "bad.safetensors";
  EXPECT_THAT(
      OpenError(raw_file(R"({"a.weight":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,10]}})", zeros(10))),
      HasSubstr(path + ": tensor 'a.weight' data_offsets [0, 10] hold 10 bytes but shape [2, 3] of BF16 needs 12"));
}

TEST_F(SafetensorsParse, NegativeShapeDimension) {
  EXPECT_THAT(OpenError(raw_file(R"({"w":{"dtype":"F32","shape":[2,-3],"data_offsets":[0,24]}})", zeros(24))),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("shape dimension 1"), HasSubstr("-3"), HasSubstr("negative")));
}

TEST_F(SafetensorsParse, NonIntegerShapeDimension) {
  EXPECT_THAT(OpenError(raw_file(R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", zeros(8))),
              AllOf(HasSubstr("shape dimension 0"), HasSubstr("not a non-negative integer")));
  EXPECT_THAT(OpenError(raw_file(R"({"w":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}})", zeros(8))),
              HasSubstr("not a non-negative integer"));
  EXPECT_THAT(
      OpenError(raw_file(R"({"w":{"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,8]}})", zeros(8))),
      HasSubstr("larger than 2^63 - 1"));
}

TEST_F(SafetensorsParse, ShapeProductOverflows) {
  EXPECT_THAT(OpenError(raw_file(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", "")),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("shape [4294967296, 4294967296] of F32 overflows")));
  // Product fits in 64 bits, times the element size does not.
  EXPECT_THAT(OpenError(raw_file(R"({"w":{"dtype":"I64","shape":[4611686018427387904],"data_offsets":[0,0]}})", "")),
              HasSubstr("overflows"));
  // A zero dimension does not excuse huge others: strides computed from them would overflow.
  EXPECT_THAT(
      OpenError(raw_file(R"({"w":{"dtype":"F32","shape":[0,4294967296,4294967296],"data_offsets":[0,0]}})", "")),
      HasSubstr("overflows"));
}

TEST_F(SafetensorsParse, UnsupportedDtype) {
  const std::string path = dir_ / "bad.safetensors";
  for (const char* dtype : {"F8_E5M2", "I8", "U8", "F64", "BOOL", "bf16"}) {
    std::string header = fmt::format(R"({{"q.weight":{{"dtype":"{}","shape":[1],"data_offsets":[0,1]}}}})", dtype);
    EXPECT_THAT(OpenError(raw_file(header, zeros(1))),
                HasSubstr(fmt::format("unsupported dtype '{}' for tensor 'q.weight' in {}", dtype, path)));
  }
  EXPECT_THAT(OpenError(raw_file(R"({"w":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})", zeros(4))),
              HasSubstr("dtype 7 (number), not a string"));
}

// FP8 checkpoints' weights: one byte per element.
TEST_F(SafetensorsParse, F8E4M3IsOneBytePerElement) {
  auto file = Open(raw_file(R"({"w":{"dtype":"F8_E4M3","shape":[2,3],"data_offsets":[0,6]}})",
                            std::string("\x38\x40\xc4\0\0\x7e", 6)));
  const Tensor w = file->tensor(*file->find("w"));
  EXPECT_EQ(w.dtype, DType::kF8E4M3);
  EXPECT_EQ(w.nbytes(), 6u);
  EXPECT_EQ(e4m3_to_float(static_cast<const uint8_t*>(w.data)[2]), -3.0f);
  EXPECT_THAT(OpenError(raw_file(R"({"w":{"dtype":"F8_E4M3","shape":[2,3],"data_offsets":[0,12]}})", zeros(12))),
              HasSubstr("tensor 'w'"));
}

TEST_F(SafetensorsParse, MissingField) {
  EXPECT_THAT(OpenError(raw_file(R"({"w":{"dtype":"F32","shape":[2]}})", zeros(8))),
              HasSubstr("tensor 'w' is missing the 'data_offsets' field"));
  EXPECT_THAT(OpenError(raw_file(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", zeros(8))),
              HasSubstr("missing the 'shape' field"));
  EXPECT_THAT(OpenError(raw_file(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", zeros(8))),
              HasSubstr("missing the 'dtype' field"));
}

TEST_F(SafetensorsParse, UnexpectedFieldOrEntryType) {
  EXPECT_THAT(OpenError(raw_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"scale":1}})", zeros(8))),
              HasSubstr("tensor 'w' has an unexpected field 'scale'"));
  EXPECT_THAT(OpenError(raw_file(R"({"w":[1,2]})", "")), HasSubstr("tensor 'w' is [1,2] (array), not an object"));
}

TEST_F(SafetensorsParse, DataOffsetsMalformed) {
  EXPECT_THAT(OpenError(raw_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", zeros(8))),
              HasSubstr("data_offsets [0], not an array of two integers"));
  EXPECT_THAT(OpenError(raw_file(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[-1,-1]}})", "")),
              AllOf(HasSubstr("data_offsets begin"), HasSubstr("negative")));
}

TEST_F(SafetensorsParse, BeginAfterEnd) {
  EXPECT_THAT(OpenError(raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", zeros(8))),
              HasSubstr("tensor 'w' has data_offsets [8, 4] whose begin is past its end"));
}

TEST_F(SafetensorsParse, MetadataMustMapStringsToStrings) {
  EXPECT_THAT(OpenError(raw_file(R"({"__metadata__":{"format":"pt","layers":3}})", "")),
              HasSubstr("__metadata__ value of 'layers' is 3 (number), not a string"));
  EXPECT_THAT(OpenError(raw_file(R"({"__metadata__":["pt"]})", "")), HasSubstr("__metadata__ is [\"pt\"] (array)"));
}

TEST_F(SafetensorsParse, DeeplyNestedHeaderFailsCleanly) {
  const size_t depth = 200000;
  std::string header = "{\"a\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
  EXPECT_THAT(OpenError(raw_file(header, "")), HasSubstr("nested deeper than 64 levels"));
  std::string objects = "{";
  for (size_t i = 0; i < depth; ++i) objects += "\"k\":{";
  EXPECT_THAT(OpenError(raw_file(objects, "")), HasSubstr("nested deeper than 64 levels"));
  // Within the limit, nesting is a type error, not a depth error.
  std::string shallow = "{\"__metadata__\":{\"k\":" + std::string(50, '[') + std::string(50, ']') + "}}";
  EXPECT_THAT(OpenError(raw_file(shallow, "")), AllOf(HasSubstr("not a string"), Not(HasSubstr("nested"))));
}

TEST_F(SafetensorsParse, RankAboveFourOpensButHasNoView) {
  auto file = Open(raw_file(padded(R"({"w":{"dtype":"F32","shape":[1,1,1,1,2],"data_offsets":[0,8]}})"), zeros(8)));
  EXPECT_THAT(error_of([&] { file->tensor(*file->find("w")); }),
              AllOf(HasSubstr("tensor 'w' has rank 5"), HasSubstr("at most 4")));
}

TEST_F(SafetensorsParse, MisalignedTensorOpensButHasNoView) {
  // Valid per the format, but a float* into it would be misaligned.
  std::string header = R"({"b":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]},)"
                       R"("f":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})";
  auto file = Open(raw_file(padded(header), zeros(6)));
  EXPECT_NO_THROW(file->tensor(*file->find("b")));
  EXPECT_THAT(error_of([&] { file->tensor(*file->find("f")); }),
              AllOf(HasSubstr("tensor 'f' (F32) starts at byte " + std::to_string(8 + padded(header).size() + 2)),
                    HasSubstr("not a multiple of its 4-byte element size")));
}

TEST_F(SafetensorsParse, NotAFile) {
  EXPECT_THAT(error_of([&] { SafetensorsFile::open(dir_.path().string()); }), HasSubstr("is not a regular file"));
  EXPECT_THAT(error_of([&] { SafetensorsFile::open(dir_ / "absent.safetensors"); }),
              AllOf(HasSubstr("cannot open"), HasSubstr("absent.safetensors")));
}

// ---- writer ----

TEST(SafetensorsWrite, RoundTripAllDtypesWithMetadata) {
  TempDir dir;
  std::vector<uint16_t> bf16 = {float_to_bf16(1.5f), float_to_bf16(-2.0f), float_to_bf16(3.25f),
                                float_to_bf16(0.0f), float_to_bf16(7.0f),  float_to_bf16(-0.5f)};
  std::vector<uint16_t> f16 = {float_to_f16(0.5f), float_to_f16(-1.0f), float_to_f16(65504.0f)};
  std::vector<float> f32 = {1.0f, -2.5f, 3.0e-8f, 1.0e30f};
  std::vector<int32_t> i32 = {-7, 0, 2147483647};
  std::vector<int64_t> i64 = {-1, int64_t{1} << 40};
  // Not sorted by name, so the test sees that the given order is kept.
  std::vector<NamedTensor> tensors = {
      {"i64", Tensor(i64.data(), DType::kI64, {1, 1, 1, 2})}, {"empty.i64", Tensor(nullptr, DType::kI64, {2, 0})},
      {"f32", Tensor(f32.data(), DType::kF32, {2, 1, 2})},    {"i32", Tensor(i32.data(), DType::kI32, {3})},
      {"bf16", Tensor(bf16.data(), DType::kBF16, {2, 3})},    {"empty.f32", Tensor(nullptr, DType::kF32, {0, 4})},
      {"f16", Tensor(f16.data(), DType::kF16, {3})},
  };
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "h\xc3\xa9llo"}};
  const std::string path = dir / "round.safetensors";
  write_safetensors(path, tensors, metadata);
  EXPECT_FALSE(fs::exists(path + ".tmp"));

  auto file = SafetensorsFile::open(path);
  const SafetensorsHeader& header = file->header();
  EXPECT_EQ(header.metadata, metadata);
  EXPECT_EQ(header.data_offset % 8, 0u);
  ASSERT_EQ(header.entries.size(), tensors.size());
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const SafetensorsEntry& entry = header.entries[i];
    const Tensor& in = tensors[i].tensor;
    SCOPED_TRACE(tensors[i].name);
    EXPECT_EQ(entry.name, tensors[i].name);  // laid out in the order given
    EXPECT_EQ(entry.begin, offset);
    offset = entry.end;
    Tensor out = file->tensor(entry);
    EXPECT_EQ(out.dtype, in.dtype);
    ASSERT_EQ(out.rank, in.rank);
    for (int d = 0; d < in.rank; ++d) EXPECT_EQ(out.shape[d], in.shape[d]);
    ASSERT_EQ(out.nbytes(), in.nbytes());
    if (in.nbytes() > 0) {
      EXPECT_EQ(std::memcmp(out.data, in.data, in.nbytes()), 0);
    }
  }
  EXPECT_EQ(bf16_to_float(file->tensor(*file->find("bf16")).as<uint16_t>()[2]), 3.25f);
  EXPECT_EQ(file->tensor(*file->find("i64")).as<int64_t>()[1], int64_t{1} << 40);
}

TEST(SafetensorsWrite, NoMetadataAndNoTensors) {
  TempDir dir;
  write_safetensors(dir / "empty.safetensors", {});
  auto file = SafetensorsFile::open(dir / "empty.safetensors");
  EXPECT_TRUE(file->header().entries.empty());
  EXPECT_TRUE(file->header().metadata.empty());
  EXPECT_EQ(fs::file_size(dir / "empty.safetensors"), 16u);  // "{}" padded to 8 bytes
}

TEST(SafetensorsWrite, ReplacesAnExistingFile) {
  TempDir dir;
  float one = 1.0f, two[2] = {2.0f, 3.0f};
  write_safetensors(dir / "w.safetensors", {{"x", Tensor(&one, DType::kF32, {1})}});
  write_safetensors(dir / "w.safetensors", {{"y", Tensor(two, DType::kF32, {2})}});
  auto file = SafetensorsFile::open(dir / "w.safetensors");
  EXPECT_EQ(file->find("x"), nullptr);
  ASSERT_NE(file->find("y"), nullptr);
  EXPECT_EQ(file->tensor(*file->find("y")).as<float>()[1], 3.0f);
}

TEST(SafetensorsWrite, RejectsBadInput) {
  TempDir dir;
  float value = 1.0f;
  Tensor t(&value, DType::kF32, {1});
  EXPECT_THAT(error_of([&] {
                write_safetensors(dir / "d.safetensors", {{"x", t}, {"x", t}});
              }),
              HasSubstr("tensor 'x' is given twice"));
  EXPECT_THAT(error_of([&] {
                write_safetensors(dir / "m.safetensors", {{"__metadata__", t}});
              }),
              HasSubstr("'__metadata__'"));
  EXPECT_THAT(error_of([&] { write_safetensors(dir / "u.safetensors", {{"bad\xff", t}}); }), HasSubstr("UTF-8"));
  EXPECT_THAT(error_of([&] {
                write_safetensors(dir / "no/such/dir.safetensors", {{"x", t}});
              }),
              HasSubstr("cannot create"));
  EXPECT_FALSE(fs::exists(dir / "d.safetensors"));
  uint16_t half = 0;
  EXPECT_THAT(error_of([&] {
                write_safetensors(dir / "a.safetensors", {{"h", Tensor(&half, DType::kBF16, {1})}, {"x", t}});
              }),
              AllOf(HasSubstr("tensor 'x' (F32) would start at byte 2"), HasSubstr("4-byte element size")));
  EXPECT_FALSE(fs::exists(dir / "a.safetensors.tmp"));
}

}  // namespace
}  // namespace fg
