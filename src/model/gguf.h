// model/gguf.h — a validating reader of GGUF files (llama.cpp's checkpoint format), versions 2 and 3.
//
// A GGUF file is a header (magic, version, counts), metadata key/value pairs, tensor infos (name,
// dimensions, ggml type, offset), then a data section that starts at the next multiple of
// `general.alignment` (default 32). Nothing is handed out before the whole header has been
// checked: every count, string length, array length, dimension product, offset and byte size
// against the file size, with overflow-checked arithmetic, before it is used; duplicate keys and
// tensor names, nested arrays, unknown ggml types and tensors that overlap or leave the data
// section are refused. Errors name the file, the key or tensor, and the numbers.
//
// GGUF lists a tensor's dimensions fastest-first (ne[0] is the row length); GgufTensorInfo::shape
// holds them reversed, outermost first, as every other shape in fullgraph is written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"
#include "model/ggml_type.h"
#include "model/gguf_metadata.h"

namespace fg {

struct GgufTensorInfo {
  std::string name;
  GgmlType type = GgmlType::kF32;
  std::vector<int64_t> shape;  // outermost first: GGUF's ne reversed, so shape.back() == ne[0], the row length
  uint64_t offset = 0;         // bytes from the start of the data section; a multiple of the alignment
  uint64_t size = 0;           // bytes

  int64_t numel() const;
  int64_t row_length() const { return shape.back(); }
};

struct GgufHeader {
  uint32_t version = 0;
  uint64_t alignment = 32;  // general.alignment, or ggml's default
  uint64_t data_offset = 0;  // where the data section starts in the file: a multiple of the alignment
  uint64_t data_size = 0;    // bytes from data_offset to the end of the file
  GgufMetadata metadata;
  std::vector<GgufTensorInfo> tensors;  // in file order
};

// Validates a whole GGUF image held in memory; `source` names it in errors.
GgufHeader parse_gguf(std::span<const std::byte> file, const std::string& source);

// One memory-mapped, validated GGUF file.
class GgufFile {
 public:
  static std::shared_ptr<GgufFile> open(const std::string& path);
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  const GgufHeader& header() const { return header_; }
  const GgufMetadata& metadata() const { return header_.metadata; }
  const std::vector<GgufTensorInfo>& tensors() const { return header_.tensors; }
  // nullptr if absent.
  const GgufTensorInfo* find(const std::string& name) const;
  // Throws naming the tensor and the file when absent.
  const GgufTensorInfo& tensor(const std::string& name) const;
  // The tensor's bytes in the mapping (read-only; valid while this file lives).
  std::span<const std::byte> bytes(const GgufTensorInfo& info) const;

 private:
  GgufFile() = default;
  std::string path_;
  MappedFile mapped_;
  GgufHeader header_;
  std::map<std::string, size_t> index_;
};

}  // namespace fg
