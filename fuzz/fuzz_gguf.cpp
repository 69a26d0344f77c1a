// fuzz/fuzz_gguf.cpp — libFuzzer target for the GGUF reader and the dequantizer.
//
// Any input must either validate or raise fg::Error. A crash, a sanitizer report, another
// exception type, or a validated header whose tensors leave the data section, overlap or sit at
// unaligned offsets is a finding. Every tensor of a handled type is dequantized (to fp32 and to
// bf16) from the input buffer itself, so ASan checks each offset and size against the real bytes;
// every metadata value goes through its typed lookup.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "core/error.h"
#include "model/gguf.h"
#include "model/gguf_dequant.h"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

void read_every_value(const fg::GgufMetadata& m) {
  for (const std::string& key : m.keys()) {
    const fg::GgufValue& v = m.at(key);
    try {
      switch (v.is_array() ? v.element_type : v.type) {
        case fg::GgufValueType::kString:
          if (v.is_array()) require(m.get_string_array(key).size() == v.count);
          else (void)m.get_string(key);
          break;
        case fg::GgufValueType::kBool:
          if (v.is_array()) require(m.get_bool_array(key).size() == v.count);
          else (void)m.get_bool(key);
          break;
        case fg::GgufValueType::kF32:
        case fg::GgufValueType::kF64:
          if (v.is_array()) require(m.get_float_array(key).size() == v.count);
          else (void)m.get_float(key);
          break;
        default:
          if (v.is_array()) require(m.get_int_array(key).size() == v.count);
          else (void)m.get_int(key);
          break;
      }
    } catch (const fg::Error&) {
      // uint64 values above 2^63 - 1 are refused by the integer lookups, by design
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> image(reinterpret_cast<const std::byte*>(data), size);
  fg::GgufHeader header;
  try {
    header = fg::parse_gguf(image, "fuzz input");
  } catch (const fg::Error&) {
    return 0;
  }
  require(header.alignment != 0 && (header.alignment & (header.alignment - 1)) == 0);
  require(header.data_offset % header.alignment == 0);
  require(header.data_size == (size > header.data_offset ? size - header.data_offset : 0));
  read_every_value(header.metadata);

  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const fg::GgufTensorInfo& t : header.tensors) {
    require(t.shape.size() >= 1 && t.shape.size() <= 4);
    require(t.offset % header.alignment == 0);
    require(t.offset <= header.data_size && t.size <= header.data_size - t.offset);
    if (t.size > 0) spans.emplace_back(t.offset, t.offset + t.size);
    if (!fg::can_dequantize(t.type)) continue;
    std::span<const std::byte> bytes = t.size == 0 ? std::span<const std::byte>{}
                                                   : image.subspan(header.data_offset + t.offset, t.size);
    std::vector<float> f32 = fg::dequantize_tensor(t, bytes);
    std::vector<uint16_t> bf16(f32.size());
    fg::dequantize_to_bf16(t.type, bytes, bf16, t.name);
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) require(spans[i].first >= spans[i - 1].second);  // no overlap
  return 0;
}
