// tests/test_safetensors.cpp — the safetensors reader, writer and checkpoint loader.
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

namespace fg {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// A fresh folder per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = fs::temp_directory_path() / fmt::format("fg_safetensors_{}_{}", ::getpid(), counter++);
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

// The raw layout of a safetensors file; `length` overrides the header length field.
std::string raw_file(const std::string& header, const std::string& data, std::optional<uint64_t> length = {}) {
  uint64_t n = length.value_or(header.size());
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string zeros(size_t n) { return std::string(n, '\0'); }

// Space padding to a multiple of 8, as real writers do, so that typed views are aligned.
std::string padded(std::string header) {
  header.append((8 - header.size() % 8) % 8, ' ');
  return header;
}

// Runs `body`, which must throw fg::Error, and returns the message.
template <typename Body>
std::string error_of(Body&& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an fg::Error";
  return "";
}

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

// ---- checkpoints ----

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
