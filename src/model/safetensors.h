// model/safetensors.h — a validating reader of safetensors files and sharded checkpoints.
//
// Nothing is handed out before the whole file has been checked: header length and bounds, a
// UTF-8 JSON object header without duplicate keys, known dtypes, non-negative shapes, byte
// sizes that match shape × dtype (overflow-checked), offsets contiguous from 0 without gap or
// overlap, data ending exactly at the end of the file. Errors name the file and the tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"
#include "core/tensor.h"

namespace fg {

struct SafetensorsEntry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets relative to the start of the data section
  uint64_t end = 0;
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  // in header order
  std::map<std::string, std::string> metadata;
  uint64_t data_offset = 0;  // 8 + header length
};

// Validates a whole safetensors image held in memory; `source` names it in errors.
SafetensorsHeader parse_safetensors(std::span<const std::byte> file, const std::string& source);

// One memory-mapped, validated safetensors file.
class SafetensorsFile {
 public:
  static std::shared_ptr<SafetensorsFile> open(const std::string& path);
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }
  // The tensor's bytes as a host view; nullptr if absent.
  const SafetensorsEntry* find(const std::string& name) const;
  Tensor tensor(const SafetensorsEntry& entry) const;

 private:
  SafetensorsFile() = default;
  std::string path_;
  MappedFile mapped_;
  SafetensorsHeader header_;
  std::map<std::string, size_t> index_;
};

// All tensors of a checkpoint folder: model.safetensors, or the shards named by
// model.safetensors.index.json (paths confined to the folder; every tensor in exactly one shard,
// and each shard holding exactly what the index says).
class Checkpoint {
 public:
  static Checkpoint open(const std::string& dir);

  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  // Throws naming the tensor and folder when absent.
  Tensor tensor(const std::string& name) const;
  std::vector<std::string> names() const;
  const std::string& dir() const { return dir_; }

 private:
  struct Located {
    const SafetensorsFile* file;
    const SafetensorsEntry* entry;
  };
  std::string dir_;
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, Located> tensors_;
};

// Writes named host tensors as one safetensors file (used by --dump-logits and by tests that
// build malformed or synthetic checkpoints). Tensors are laid out in the order given.
struct NamedTensor {
  std::string name;
  Tensor tensor;
};
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace fg
