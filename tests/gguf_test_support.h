// tests/gguf_test_support.h — what the GGUF tests share: the committed fixtures' folder, a byte
// builder for hand-made (and deliberately broken) GGUF images, and reading files whole.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/gguf.h"

namespace fg::test {

// The repository root: $FULLGRAPH_SOURCE_DIR, or the folder above this header's (the build names
// sources by absolute path).
inline std::filesystem::path source_dir() {
  if (const char* env = std::getenv("FULLGRAPH_SOURCE_DIR")) return env;
  return std::filesystem::path(__FILE__).parent_path().parent_path();
}
inline std::filesystem::path gguf_fixtures() { return source_dir() / "tests" / "fixtures" / "gguf"; }

inline std::string read_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_file_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

// A fresh folder under the temporary directory, removed with this object.
class TempDirPath {
 public:
  explicit TempDirPath(const std::string& prefix) {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDirPath() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDirPath(const TempDirPath&) = delete;
  TempDirPath& operator=(const TempDirPath&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline std::span<const std::byte> as_image(const std::string& bytes) {
  return std::as_bytes(std::span(bytes.data(), bytes.size()));
}

// ---- encoding GGUF by hand, little-endian as the format is ----

inline std::string le32(uint32_t v) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}
inline std::string le64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}
inline std::string gguf_string(std::string_view s) { return le64(s.size()) + std::string(s); }

// One metadata pair: key, value type, and the value's encoding.
inline std::string gguf_kv(std::string_view key, GgufValueType type, const std::string& value) {
  return gguf_string(key) + le32(static_cast<uint32_t>(type)) + value;
}
inline std::string kv_u32(std::string_view key, uint32_t v) { return gguf_kv(key, GgufValueType::kU32, le32(v)); }
inline std::string kv_string(std::string_view key, std::string_view v) {
  return gguf_kv(key, GgufValueType::kString, gguf_string(v));
}
// An array's encoding after its type: element type, count, elements.
inline std::string gguf_array(GgufValueType element, uint64_t count, const std::string& elements) {
  return le32(static_cast<uint32_t>(element)) + le64(count) + elements;
}

inline std::string tensor_info(std::string_view name, const std::vector<uint64_t>& ne, uint32_t type,
                               uint64_t offset) {
  std::string out = gguf_string(name) + le32(static_cast<uint32_t>(ne.size()));
  for (uint64_t d : ne) out += le64(d);
  return out + le32(type) + le64(offset);
}

// A whole image: header, the given key/values and tensor infos (already encoded), zero padding to
// `alignment`, then `data`. The counts are given separately so that tests can lie in them.
struct GgufImage {
  uint32_t version = 3;
  uint64_t tensor_count = 0;
  uint64_t kv_count = 0;
  std::string kvs;
  std::string tensor_infos;
  uint64_t alignment = 32;
  std::string data;

  GgufImage& kv(const std::string& encoded) {
    kvs += encoded;
    ++kv_count;
    return *this;
  }
  GgufImage& tensor(const std::string& encoded) {
    tensor_infos += encoded;
    ++tensor_count;
    return *this;
  }
  std::string bytes() const {
    std::string out = "GGUF" + le32(version) + le64(tensor_count) + le64(kv_count) + kvs + tensor_infos;
    out.append((alignment - out.size() % alignment) % alignment, '\0');
    return out + data;
  }
};

}  // namespace fg::test
