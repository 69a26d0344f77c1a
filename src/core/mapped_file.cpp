// core/mapped_file.cpp — see mapped_file.h.
#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace fg {

MappedFile MappedFile::open(const std::string& path) {
  // O_NONBLOCK so that a FIFO named like a checkpoint fails the regular-file check, not hangs.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  FG_CHECK(fd >= 0, "cannot open {}: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int saved = errno;
    ::close(fd);
    fail("cannot stat {}: {}", path, std::strerror(saved));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("{} is not a regular file", path);
  }
  MappedFile file;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ > 0) {
    void* map = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    const int saved = errno;
    ::close(fd);
    if (map == MAP_FAILED) {
      file.size_ = 0;
      fail("cannot mmap {} ({} bytes): {}", path, static_cast<size_t>(st.st_size), std::strerror(saved));
    }
    file.data_ = static_cast<const std::byte*>(map);
  } else {
    ::close(fd);
  }
  return file;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace fg
