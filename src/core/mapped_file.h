// core/mapped_file.h — a whole regular file mapped read-only into memory, as the checkpoint readers
// (safetensors, GGUF) validate and then read it: the bytes stay valid while the object lives.
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace fg {

class MappedFile {
 public:
  MappedFile() = default;
  // Throws fg::Error naming the path when it cannot be opened, is not a regular file (a FIFO
  // named like a checkpoint fails here rather than hangs) or cannot be mapped. An empty file maps
  // to no bytes.
  static MappedFile open(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }

 private:
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace fg
