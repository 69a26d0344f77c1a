// model/ggml_type.cpp — the table of ggml's tensor types and their block layouts.
#include "model/ggml_type.h"

#include <fmt/format.h>

#include <array>
#include <limits>

#include "core/error.h"

namespace fg {
namespace {

constexpr int64_t kQK_K = 256;  // elements per super-block of the K-quants and most IQ types

constexpr std::array kTypes = {
    GgmlTypeInfo{GgmlType::kF32, "F32", 1, 4},
    GgmlTypeInfo{GgmlType::kF16, "F16", 1, 2},
    GgmlTypeInfo{GgmlType::kQ4_0, "Q4_0", 32, 2 + 16},
    GgmlTypeInfo{GgmlType::kQ4_1, "Q4_1", 32, 2 + 2 + 16},
    GgmlTypeInfo{GgmlType::kQ5_0, "Q5_0", 32, 2 + 4 + 16},
    GgmlTypeInfo{GgmlType::kQ5_1, "Q5_1", 32, 2 + 2 + 4 + 16},
    GgmlTypeInfo{GgmlType::kQ8_0, "Q8_0", 32, 2 + 32},
    GgmlTypeInfo{GgmlType::kQ8_1, "Q8_1", 32, 4 + 4 + 32},
    GgmlTypeInfo{GgmlType::kQ2_K, "Q2_K", kQK_K, 2 + 2 + kQK_K / 16 + kQK_K / 4},
    GgmlTypeInfo{GgmlType::kQ3_K, "Q3_K", kQK_K, 2 + kQK_K / 4 + kQK_K / 8 + 12},
    GgmlTypeInfo{GgmlType::kQ4_K, "Q4_K", kQK_K, 2 + 2 + kQK_K / 2 + 12},
    GgmlTypeInfo{GgmlType::kQ5_K, "Q5_K", kQK_K, 2 + 2 + kQK_K / 2 + kQK_K / 8 + 12},
    GgmlTypeInfo{GgmlType::kQ6_K, "Q6_K", kQK_K, 2 + kQK_K / 2 + kQK_K / 4 + kQK_K / 16},
    GgmlTypeInfo{GgmlType::kQ8_K, "Q8_K", kQK_K, 4 + kQK_K + kQK_K / 8},
    GgmlTypeInfo{GgmlType::kIQ2_XXS, "IQ2_XXS", kQK_K, 2 + kQK_K / 4},
    GgmlTypeInfo{GgmlType::kIQ2_XS, "IQ2_XS", kQK_K, 2 + kQK_K / 4 + kQK_K / 32},
    GgmlTypeInfo{GgmlType::kIQ3_XXS, "IQ3_XXS", kQK_K, 2 + kQK_K / 4 + kQK_K / 8},
    GgmlTypeInfo{GgmlType::kIQ1_S, "IQ1_S", kQK_K, 2 + kQK_K / 8 + kQK_K / 16},
    GgmlTypeInfo{GgmlType::kIQ4_NL, "IQ4_NL", 32, 2 + 16},
    GgmlTypeInfo{GgmlType::kIQ3_S, "IQ3_S", kQK_K, 2 + kQK_K / 4 + kQK_K / 8 + kQK_K / 32 + 4},
    GgmlTypeInfo{GgmlType::kIQ2_S, "IQ2_S", kQK_K, 2 + kQK_K / 4 + kQK_K / 16},
    GgmlTypeInfo{GgmlType::kIQ4_XS, "IQ4_XS", kQK_K, 2 + 2 + kQK_K / 2 + kQK_K / 64},
    GgmlTypeInfo{GgmlType::kI8, "I8", 1, 1},
    GgmlTypeInfo{GgmlType::kI16, "I16", 1, 2},
    GgmlTypeInfo{GgmlType::kI32, "I32", 1, 4},
    GgmlTypeInfo{GgmlType::kI64, "I64", 1, 8},
    GgmlTypeInfo{GgmlType::kF64, "F64", 1, 8},
    GgmlTypeInfo{GgmlType::kIQ1_M, "IQ1_M", kQK_K, kQK_K / 8 + kQK_K / 16 + kQK_K / 32},
    GgmlTypeInfo{GgmlType::kBF16, "BF16", 1, 2},
    GgmlTypeInfo{GgmlType::kTQ1_0, "TQ1_0", kQK_K, 2 + 4 * 13},
    GgmlTypeInfo{GgmlType::kTQ2_0, "TQ2_0", kQK_K, 2 + 64},
    GgmlTypeInfo{GgmlType::kMXFP4, "MXFP4", 32, 1 + 16},
    GgmlTypeInfo{GgmlType::kNVFP4, "NVFP4", 64, 4 + 32},
    GgmlTypeInfo{GgmlType::kQ1_0, "Q1_0", 128, 2 + 16},
};

// Ids ggml once used: files that still carry them were written by old or forked converters.
struct RemovedType {
  uint32_t id;
  std::string_view name;
};
constexpr std::array kRemoved = {
    RemovedType{4, "Q4_2"},        RemovedType{5, "Q4_3"},        RemovedType{31, "Q4_0_4_4"},
    RemovedType{32, "Q4_0_4_8"},   RemovedType{33, "Q4_0_8_8"},   RemovedType{36, "IQ4_NL_4_4"},
    RemovedType{37, "IQ4_NL_4_8"}, RemovedType{38, "IQ4_NL_8_8"},
};

}  // namespace

std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id) {
  for (const GgmlTypeInfo& info : kTypes)
    if (static_cast<uint32_t>(info.type) == id) return info;
  return std::nullopt;
}

GgmlTypeInfo ggml_type_info(GgmlType type) {
  std::optional<GgmlTypeInfo> info = ggml_type_info(static_cast<uint32_t>(type));
  FG_ASSERT(info.has_value());
  return *info;
}

std::string_view ggml_type_name(GgmlType type) { return ggml_type_info(type).name; }

std::string ggml_type_label(uint32_t id) {
  if (std::optional<GgmlTypeInfo> info = ggml_type_info(id)) return fmt::format("{} (id {})", info->name, id);
  for (const RemovedType& removed : kRemoved)
    if (removed.id == id) return fmt::format("{} (id {}, removed from ggml)", removed.name, id);
  return fmt::format("unknown type id {}", id);
}

std::optional<uint64_t> ggml_bytes(GgmlType type, uint64_t numel) {
  const GgmlTypeInfo info = ggml_type_info(type);
  FG_ASSERT(numel % static_cast<uint64_t>(info.block_size) == 0);
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(numel / static_cast<uint64_t>(info.block_size), static_cast<uint64_t>(info.block_bytes),
                             &bytes) ||
      bytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return std::nullopt;
  return bytes;
}

}  // namespace fg
