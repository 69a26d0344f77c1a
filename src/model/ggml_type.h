// model/ggml_type.h — the tensor types of ggml (llama.cpp's tensor library), as GGUF files name them.
//
// A GGUF tensor's byte size follows from its type's block layout, so the reader must know every
// type ggml defines, not only those fullgraph dequantizes: a file is validated whole before anything
// is handed out, and a tensor of a type the dequantizer lacks is refused later, by its ggml name.
// The table matches ggml.h's `enum ggml_type` and the GGML_QUANT_SIZES of the `gguf` Python package
// (tests/fixtures/gguf/ggml_types.json, written from that package, is compared with it in a test).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fg {

// ggml's numbering; ids 4, 5, 31-33 and 36-38 belonged to types ggml has since removed.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
  kNVFP4 = 40,
  kQ1_0 = 41,
};

// A type stores its elements in blocks: block_size consecutive elements of a row take block_bytes
// bytes (1 and the element size for the plain types). A row's length must be a multiple of
// block_size.
struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;  // ggml's spelling: "Q4_K", "IQ4_XS", "BF16"
  int64_t block_size;
  int64_t block_bytes;
};

// The layout of the type with ggml id `id`; nullopt for an id ggml does not define now.
std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id);
GgmlTypeInfo ggml_type_info(GgmlType type);
std::string_view ggml_type_name(GgmlType type);

// What to call type id `id` in a message: "Q4_K (id 12)", "Q4_2 (id 4, removed from ggml)", or
// "unknown type id 99".
std::string ggml_type_label(uint32_t id);

// Bytes of `numel` elements of `type`, numel a multiple of the block size; nullopt on overflow
// past 2^63 - 1.
std::optional<uint64_t> ggml_bytes(GgmlType type, uint64_t numel);

}  // namespace fg
