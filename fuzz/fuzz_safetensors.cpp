// fuzz/fuzz_safetensors.cpp — libFuzzer target for the safetensors validator.
//
// Any input must either validate or raise fg::Error. A crash, a sanitizer report, another
// exception type, or a validated header whose tensors do not tile the input exactly is a finding.
// Every validated tensor's bytes are read so that ASan checks the offsets against the real buffer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "core/error.h"
#include "model/safetensors.h"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> image(reinterpret_cast<const std::byte*>(data), size);
  fg::SafetensorsHeader header;
  try {
    header = fg::parse_safetensors(image, "fuzz input");
  } catch (const fg::Error&) {
    return 0;
  }
  require(header.data_offset >= 8 && header.data_offset <= size);
  const uint64_t data_size = size - header.data_offset;
  uint64_t total = 0;
  unsigned checksum = 0;
  for (const fg::SafetensorsEntry& entry : header.entries) {
    require(entry.begin <= entry.end && entry.end <= data_size);
    uint64_t numel = 1;
    for (int64_t dim : entry.shape) {
      require(dim >= 0);
      numel *= static_cast<uint64_t>(dim);
    }
    require(numel * fg::dtype_size(entry.dtype) == entry.end - entry.begin);
    total += entry.end - entry.begin;
    for (uint64_t i = entry.begin; i < entry.end; ++i) checksum += static_cast<unsigned>(image[header.data_offset + i]);
  }
  require(total == data_size);  // contiguous, no gap or overlap: sizes add up to the data section
  volatile unsigned sink = checksum;
  (void)sink;
  return 0;
}
