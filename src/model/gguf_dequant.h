// model/gguf_dequant.h — ggml's block formats to fp32 (and bf16) on the host.
//
// fullgraph computes in bf16 on the GPU and fp32 on the CPU, so a quantized GGUF checkpoint is
// expanded once, at load time. Handled: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K,
// Q5_K, Q6_K; every other ggml type is refused by its ggml name. The arithmetic is ggml's own
// (dequantize_row_* in ggml-quants.c), term for term in the same order and in fp32, so the result
// is bit-identical to ggml's and to the `gguf` Python package's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "model/ggml_type.h"

namespace fg {

class ThreadPool;
struct GgufTensorInfo;

// Whether dequantize_* handle `type`.
bool can_dequantize(GgmlType type);
// The handled types, comma-separated, for messages.
std::string_view dequantizable_type_names();
// Throws unless `type` is handled, naming `what` (e.g. "model.gguf: tensor 'blk.0.attn_q.weight'")
// and the type by its ggml name.
void check_dequantizable(GgmlType type, std::string_view what);

// Expands dst.size() elements of `type` held in `src` into dst. dst.size() must be a multiple of
// the type's block size and src exactly the bytes of that many elements; both are checked, naming
// `what`. With a pool, blocks are split across its threads (each element's arithmetic is the same
// whatever the split).
void dequantize_to_f32(GgmlType type, std::span<const std::byte> src, std::span<float> dst, std::string_view what,
                       ThreadPool* pool = nullptr);
// The same, each value rounded to bf16 (nearest even) from its fp32 dequantization; BF16 is copied.
void dequantize_to_bf16(GgmlType type, std::span<const std::byte> src, std::span<uint16_t> dst,
                        std::string_view what, ThreadPool* pool = nullptr);

// A whole tensor of a GGUF file (its bytes from GgufFile::bytes), row-major as info.shape says.
std::vector<float> dequantize_tensor(const GgufTensorInfo& info, std::span<const std::byte> bytes,
                                     ThreadPool* pool = nullptr);

}  // namespace fg
