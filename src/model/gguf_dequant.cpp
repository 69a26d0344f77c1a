// model/gguf_dequant.cpp — the block formats of ggml (ggml-common.h) and their expansion to fp32.
//
// Each block function follows ggml's dequantize_row_* (ggml-quants.c) in its order of operations:
// the scale products (d * sc, dmin * m: exact in fp32, an f16 times a 6- or 8-bit integer) first,
// then value * scale, then the offset, each rounded to fp32. Bit-exactness with ggml depends on
// that order and on no fused multiply-add, which the pragmas below forbid.
#include "model/gguf_dequant.h"

#include <array>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "model/gguf.h"

// Whatever -march says: with FMA available, GCC would fuse q * d + m into one rounding.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace fg {
namespace {

constexpr int kQK_K = 256;

inline float half_at(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  return f16_to_float(bits);
}

// ---- the 32-element formats: an f16 scale (and an f16 minimum), 4 or 8 bits per value ----

// Q4_0: d, then 16 bytes of nibbles; the low nibbles are elements 0-15, the high ones 16-31.
void block_q4_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 0x0F) - 8) * d;
    y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

// Q4_1: d and a minimum m, nibbles as Q4_0, unsigned.
void block_q4_1(const uint8_t* b, float* y) {
  const float d = half_at(b);
  const float m = half_at(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(qs[j] & 0x0F) * d + m;
    y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

// Q5_0: d, a 32-bit word of fifth bits (bit j for element j), then nibbles as Q4_0.
void block_q5_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  uint32_t qh;
  std::memcpy(&qh, b + 2, sizeof(qh));
  const uint8_t* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    const int h0 = static_cast<int>(((qh >> j) << 4) & 0x10);
    const int h1 = static_cast<int>((qh >> (j + 12)) & 0x10);
    y[j] = static_cast<float>(((qs[j] & 0x0F) | h0) - 16) * d;
    y[j + 16] = static_cast<float>(((qs[j] >> 4) | h1) - 16) * d;
  }
}

// Q5_1: d, m, fifth bits and nibbles as Q5_0, unsigned.
void block_q5_1(const uint8_t* b, float* y) {
  const float d = half_at(b);
  const float m = half_at(b + 2);
  uint32_t qh;
  std::memcpy(&qh, b + 4, sizeof(qh));
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const int h0 = static_cast<int>(((qh >> j) << 4) & 0x10);
    const int h1 = static_cast<int>((qh >> (j + 12)) & 0x10);
    y[j] = static_cast<float>((qs[j] & 0x0F) | h0) * d + m;
    y[j + 16] = static_cast<float>((qs[j] >> 4) | h1) * d + m;
  }
}

// Q8_0: d, then 32 signed bytes.
void block_q8_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

// ---- the K-quants: 256-element super-blocks of 16 or 32-element sub-blocks with 6- or 8-bit scales ----

// The 6-bit scale and minimum of sub-block j (0-7) of a Q4_K/Q5_K block, packed in 12 bytes:
// sub-blocks 0-3 in the low 6 bits of bytes 0-3 (scales) and 4-7 (minimums); sub-blocks 4-7 in
// the nibbles of bytes 8-11, with their top 2 bits in the top bits of bytes 0-7.
inline void scale_min_k4(int j, const uint8_t* q, int& scale, int& min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Q4_K: d, dmin, 12 bytes of scales, 128 bytes of nibbles; each 32-byte run holds two 32-element
// sub-blocks, the low nibbles first.
void block_q4_k(const uint8_t* b, float* y) {
  const float d = half_at(b);
  const float dmin = half_at(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  for (int j = 0, is = 0; j < kQK_K; j += 64, is += 2, q += 32) {
    int sc, m;
    scale_min_k4(is, scales, sc, m);
    const float d1 = d * static_cast<float>(sc);
    const float m1 = dmin * static_cast<float>(m);
    scale_min_k4(is + 1, scales, sc, m);
    const float d2 = d * static_cast<float>(sc);
    const float m2 = dmin * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0F) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
  }
}

// Q5_K: Q4_K with a fifth bit per value in 32 bytes: bit 2i of qh[l] for sub-block 2i's element
// l, bit 2i+1 for sub-block 2i+1's.
void block_q5_k(const uint8_t* b, float* y) {
  const float d = half_at(b);
  const float dmin = half_at(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* ql = b + 48;
  unsigned u1 = 1, u2 = 2;
  for (int j = 0, is = 0; j < kQK_K; j += 64, is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
    int sc, m;
    scale_min_k4(is, scales, sc, m);
    const float d1 = d * static_cast<float>(sc);
    const float m1 = dmin * static_cast<float>(m);
    scale_min_k4(is + 1, scales, sc, m);
    const float d2 = d * static_cast<float>(sc);
    const float m2 = dmin * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>((ql[l] & 0x0F) + (qh[l] & u1 ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
  }
}

// Q6_K: 128 bytes of low nibbles, 64 bytes of 2-bit high parts, 16 signed 8-bit scales (one per
// 16 elements), and d last. Each 128-element half takes 64 bytes of ql and 32 of qh.
void block_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = half_at(b + 208);
  for (int n = 0; n < kQK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
  }
}

// ---- the plain types, one element per "block" ----

void block_f32(const uint8_t* b, float* y) { std::memcpy(y, b, 4); }
void block_f16(const uint8_t* b, float* y) { *y = half_at(b); }
void block_bf16(const uint8_t* b, float* y) {
  uint16_t bits;
  std::memcpy(&bits, b, sizeof(bits));
  *y = bf16_to_float(bits);
}

using RunFn = void (*)(const uint8_t* src, float* dst, int64_t blocks);

// A loop over whole blocks with the block function inlined.
template <void (*Block)(const uint8_t*, float*), int64_t kBlockSize, int64_t kBlockBytes>
void run_blocks(const uint8_t* src, float* dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) Block(src + i * kBlockBytes, dst + i * kBlockSize);
}

struct Format {
  GgmlType type;
  int64_t block_size;
  int64_t block_bytes;
  RunFn run;
};

template <GgmlType kType, void (*Block)(const uint8_t*, float*), int64_t kBlockSize, int64_t kBlockBytes>
constexpr Format format() {
  return {kType, kBlockSize, kBlockBytes, &run_blocks<Block, kBlockSize, kBlockBytes>};
}

constexpr std::array kFormats = {
    format<GgmlType::kF32, block_f32, 1, 4>(),         format<GgmlType::kF16, block_f16, 1, 2>(),
    format<GgmlType::kBF16, block_bf16, 1, 2>(),       format<GgmlType::kQ8_0, block_q8_0, 32, 34>(),
    format<GgmlType::kQ4_0, block_q4_0, 32, 18>(),     format<GgmlType::kQ4_1, block_q4_1, 32, 20>(),
    format<GgmlType::kQ5_0, block_q5_0, 32, 22>(),     format<GgmlType::kQ5_1, block_q5_1, 32, 24>(),
    format<GgmlType::kQ4_K, block_q4_k, kQK_K, 144>(), format<GgmlType::kQ5_K, block_q5_k, kQK_K, 176>(),
    format<GgmlType::kQ6_K, block_q6_k, kQK_K, 210>(),
};

const Format* find_format(GgmlType type) {
  for (const Format& f : kFormats)
    if (f.type == type) return &f;
  return nullptr;
}

// Checks the sizes and returns the format; the block layout must agree with ggml_type.cpp's table.
const Format& checked_format(GgmlType type, size_t src_bytes, size_t count, std::string_view what) {
  check_dequantizable(type, what);
  const Format& f = *find_format(type);
  const GgmlTypeInfo info = ggml_type_info(type);
  FG_ASSERT(info.block_size == f.block_size && info.block_bytes == f.block_bytes);
  const uint64_t n = count;
  FG_CHECK(n % static_cast<uint64_t>(f.block_size) == 0,
           "{}: {} elements of {} are not a whole number of its {}-element blocks", what, n, info.name, f.block_size);
  const uint64_t blocks = n / static_cast<uint64_t>(f.block_size);
  FG_CHECK(src_bytes / static_cast<uint64_t>(f.block_bytes) == blocks && src_bytes % f.block_bytes == 0,
           "{}: {} bytes of {} given for {} elements, which take {} bytes ({} blocks of {} bytes)", what, src_bytes,
           info.name, n, blocks * static_cast<uint64_t>(f.block_bytes), blocks, f.block_bytes);
  return f;
}

// Runs body(first_block, block_count) over [0, blocks), split across the pool for large tensors.
template <typename Body>
void for_blocks(int64_t blocks, int64_t block_size, ThreadPool* pool, Body&& body) {
  constexpr int64_t kMinParallelElements = int64_t{1} << 16;  // below this, waking threads costs more
  if (pool == nullptr || pool->size() == 1 || blocks * block_size < kMinParallelElements) {
    body(int64_t{0}, blocks);
    return;
  }
  pool->parallel_for(blocks, [&](int64_t begin, int64_t end) { body(begin, end - begin); });
}

}  // namespace

bool can_dequantize(GgmlType type) { return find_format(type) != nullptr; }

std::string_view dequantizable_type_names() { return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K"; }

void check_dequantizable(GgmlType type, std::string_view what) {
  FG_CHECK(can_dequantize(type), "{} has ggml type {}, which fullgraph cannot dequantize (it handles {})", what,
           ggml_type_name(type), dequantizable_type_names());
}

void dequantize_to_f32(GgmlType type, std::span<const std::byte> src, std::span<float> dst, std::string_view what,
                       ThreadPool* pool) {
  const Format& f = checked_format(type, src.size(), dst.size(), what);
  const auto* in = reinterpret_cast<const uint8_t*>(src.data());
  const int64_t blocks = static_cast<int64_t>(dst.size()) / f.block_size;
  for_blocks(blocks, f.block_size, pool, [&](int64_t first, int64_t count) {
    f.run(in + first * f.block_bytes, dst.data() + first * f.block_size, count);
  });
}

void dequantize_to_bf16(GgmlType type, std::span<const std::byte> src, std::span<uint16_t> dst,
                        std::string_view what, ThreadPool* pool) {
  const Format& f = checked_format(type, src.size(), dst.size(), what);
  if (type == GgmlType::kBF16) {
    if (!dst.empty()) std::memcpy(dst.data(), src.data(), src.size());
    return;
  }
  const auto* in = reinterpret_cast<const uint8_t*>(src.data());
  const int64_t blocks = static_cast<int64_t>(dst.size()) / f.block_size;
  // Through an fp32 staging buffer of whole blocks: each value is rounded once, from its exact
  // fp32 dequantization.
  constexpr int64_t kStage = 4096;
  const int64_t blocks_per_stage = kStage / f.block_size;
  for_blocks(blocks, f.block_size, pool, [&](int64_t first, int64_t count) {
    std::array<float, kStage> stage;
    for (int64_t done = 0; done < count; done += blocks_per_stage) {
      const int64_t n = std::min(blocks_per_stage, count - done);
      const int64_t block = first + done;
      f.run(in + block * f.block_bytes, stage.data(), n);
      uint16_t* out = dst.data() + block * f.block_size;
      for (int64_t i = 0; i < n * f.block_size; ++i) out[i] = float_to_bf16(stage[static_cast<size_t>(i)]);
    }
  });
}

std::vector<float> dequantize_tensor(const GgufTensorInfo& info, std::span<const std::byte> bytes, ThreadPool* pool) {
  const std::string what = "tensor '" + info.name + "'";
  check_dequantizable(info.type, what);
  std::vector<float> out(static_cast<size_t>(info.numel()));
  dequantize_to_f32(info.type, bytes, out, what, pool);
  return out;
}

}  // namespace fg
