// attention/cuda/flash_attention_mma.h — device building blocks shared by the `flash` and
// `split_kv` kernels: cp.async copies, ldmatrix, the bf16 m16n8k16 tensor-core MMA with fp32
// accumulation, the swizzled shared-memory tile layout, the per-warp online-softmax step and a
// warp's step over one KV tile (paged_kv_walk.h builds the walks from them). Included only by .cu
// files (device code, no host-side checks here).
//
// Fragment layout of mma.m16n8k16 used throughout (lane = 4 * g + t, g = lane / 4, t = lane % 4):
//   C/D (16x8 fp32):   c0, c1 -> row g,     cols 2t, 2t+1;  c2, c3 -> row g + 8, same cols.
//   A (16x16 bf16):    a0a1 -> (row g, k 2t..2t+1), a2a3 -> (row g+8, k 2t..), a4a5 -> (row g,
//                      k 2t+8..), a6a7 -> (row g+8, k 2t+8..).
//   B (16x8 bf16, k x n, "col"): b0b1 -> (k 2t..2t+1, n g), b2b3 -> (k 2t+8.., n g).
// So the fp32 accumulators of S = Q K^T for columns [16j, 16j + 16) are, once rounded to bf16, the
// A fragment of P for the k-step j of O += P V, with no shuffles (the usual FlashAttention-2 trick).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace fg::attn {

constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte global -> shared copy; when !valid nothing is read and the 16 bytes are zero-filled, so
// positions past the context hold zeros, never stale data that could turn 0 * x into NaN.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// d += a * b on the tensor cores: bf16 operands, fp32 accumulation.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats as a bf16 pair, the first in the low half (the lower column of a fragment).
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// Byte offset of 16-byte chunk `chunk` (8 bf16) of row `row` in a [rows][HD] bf16 tile in shared
// memory. The chunk index is XORed with row % 8: the 8 rows an ldmatrix reads at one logical
// chunk then land in 8 different 16-byte bank groups, so neither ldmatrix nor the cp.async
// writes conflict (rows are 128 or 256 bytes, which would otherwise put them all in one group).
template <int HD>
__device__ __forceinline__ uint32_t swizzle(int row, int chunk) {
  static_assert(HD / 8 >= 8, "the XOR swizzle needs at least 8 chunks per row");
  return static_cast<uint32_t>(row * (HD * 2) + ((chunk ^ (row & 7)) << 4));
}

// 2^x on the special-function unit alone (ex2.approx.ftz). exp2f adds a range test and two
// multiplies per call so that results below 2^-126 come out subnormal rather than zero; a softmax
// weight that small is 2^-126 of the row's largest (which is 1), far below fp32's resolution of
// the row's sum, so flushing it changes no stored value. The softmax's inner loop is issue-bound
// beside the tensor cores, and those three instructions per score were a sixth of it.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// One online-softmax step over a warp's scores of one KV tile. s holds raw scores (Q K^T), masked
// entries -inf; rows g (entries 0, 1) and g + 8 (2, 3). The scale (softmax scale * log2 e) is
// folded into the exponent: the running maxima m are kept in the log2 domain (max(s) * scale is
// the largest scaled score, rounding being monotonic) and p = 2^(s * scale - m_new) is one FMA and
// one ex2. On return s holds p, m the running maxima, l the running per-thread partial sums
// (reduced across the quad only at the end), and alpha the factor the caller applies to its O
// accumulators. A row with no visible key so far keeps m = -inf and uses 0 as its reference, so
// no (-inf) - (-inf) NaN appears.
template <int NS>
__device__ __forceinline__ void online_softmax_step(float (&s)[NS][4], float scale_log2, float (&m)[2], float (&l)[2],
                                                    float (&alpha)[2]) {
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int n = 0; n < NS; ++n) {
    mx[0] = fmaxf(mx[0], fmaxf(s[n][0], s[n][1]));
    mx[1] = fmaxf(mx[1], fmaxf(s[n][2], s[n][3]));
  }
  float base[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(kFullMask, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(kFullMask, mx[r], 2));
    const float m_new = fmaxf(m[r], mx[r] * scale_log2);
    base[r] = m_new == -INFINITY ? 0.0f : m_new;
    alpha[r] = fast_exp2(m[r] - base[r]);
    m[r] = m_new;
  }
  float sum[2] = {0.0f, 0.0f};
#pragma unroll
  for (int n = 0; n < NS; ++n) {
    s[n][0] = fast_exp2(fmaf(s[n][0], scale_log2, -base[0]));
    s[n][1] = fast_exp2(fmaf(s[n][1], scale_log2, -base[0]));
    s[n][2] = fast_exp2(fmaf(s[n][2], scale_log2, -base[1]));
    s[n][3] = fast_exp2(fmaf(s[n][3], scale_log2, -base[1]));
    sum[0] += s[n][0] + s[n][1];
    sum[1] += s[n][2] + s[n][3];
  }
  l[0] = l[0] * alpha[0] + sum[0];
  l[1] = l[1] * alpha[1] + sum[1];
}

// Loads the A fragments of a warp's 16 query rows (starting at q_row0 of the swizzled Q tile at
// sq) for all HD / 16 k-steps: matrix i of the x4 load is (rows + 8 * (i & 1), k chunk + (i >> 1)).
template <int HD>
__device__ __forceinline__ void load_q_fragments(uint32_t (&qa)[HD / 16][4], uint32_t sq, int q_row0, int lane) {
  const int i = lane >> 3;
  const int row = q_row0 + (i & 1) * 8 + (lane & 7);
#pragma unroll
  for (int ks = 0; ks < HD / 16; ++ks) ldmatrix_x4(qa[ks], sq + swizzle<HD>(row, ks * 2 + (i >> 1)));
}

// s[2j + e] (8 KV columns each) = Q K^T for the NS * 8 KV rows starting at k_row0 of the tile at sk.
// Matrix i of each x4 load is (KV rows + 8 * (i >> 1), k chunk + (i & 1)): b0b1 and b2b3 of two
// adjacent n-tiles.
template <int HD, int NS>
__device__ __forceinline__ void qk_scores(float (&s)[NS][4], const uint32_t (&qa)[HD / 16][4], uint32_t sk,
                                          int k_row0, int lane) {
  static_assert(NS % 2 == 0, "n-tiles come in pairs");
#pragma unroll
  for (int n = 0; n < NS; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
  const int i = lane >> 3;
#pragma unroll
  for (int ks = 0; ks < HD / 16; ++ks) {
#pragma unroll
    for (int np = 0; np < NS / 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, sk + swizzle<HD>(k_row0 + np * 16 + (i >> 1) * 8 + (lane & 7), ks * 2 + (i & 1)));
      mma_bf16(s[2 * np], qa[ks], b[0], b[1]);
      mma_bf16(s[2 * np + 1], qa[ks], b[2], b[3]);
    }
  }
}

// o += P V for the NS * 8 KV rows starting at v_row0 of the tile at sv (p = the s array after
// online_softmax_step). Matrix i of each transposed x4 load is (KV rows + 8 * (i & 1), dim chunk
// + (i >> 1)): b0b1 and b2b3 of two adjacent dim n-tiles.
template <int HD, int NS>
__device__ __forceinline__ void pv_accumulate(float (&o)[HD / 8][4], const float (&p)[NS][4], uint32_t sv,
                                              int v_row0, int lane) {
  const int i = lane >> 3;
#pragma unroll
  for (int kk = 0; kk < NS / 2; ++kk) {
    const uint32_t pa[4] = {pack_bf16(p[2 * kk][0], p[2 * kk][1]), pack_bf16(p[2 * kk][2], p[2 * kk][3]),
                            pack_bf16(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                            pack_bf16(p[2 * kk + 1][2], p[2 * kk + 1][3])};
#pragma unroll
    for (int dp = 0; dp < HD / 16; ++dp) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, sv + swizzle<HD>(v_row0 + kk * 16 + (i & 1) * 8 + (lane & 7), dp * 2 + (i >> 1)));
      mma_bf16(o[2 * dp], pa, b[0], b[1]);
      mma_bf16(o[2 * dp + 1], pa, b[2], b[3]);
    }
  }
}

// The flash kernel's 128-row walk gives each warp MT m-tiles of 16 query rows and loads each K or
// V fragment once for all of them: at MT = 2, half the shared-memory bytes per mma of the one-m-tile
// steps above (FlashAttention-2's 128 x 64 tile on four warps). Shared memory feeds the tensor
// cores, so those bytes bound the prefill's rate. At MT = 1 these compute what qk_scores and
// pv_accumulate do, in another load order; the decode walks keep theirs. Routed through these,
// split_kv's and the short walk's code gets the same registers and bits but a reordered ldmatrix
// schedule, which no device run has measured yet.
//
// s[mt][2j + e] (8 KV columns each) = Q K^T for m-tile mt (query rows q_row0 + 16 mt of the tile
// at sq) and the NS * 8 KV rows of the tile at sk. Q's A fragments come from registers
// (kQInRegs: qa[mt][ks], loaded once per walk) or from the Q tile at each k-step (hd 128, where
// 2 x 32 registers of Q would not fit beside O and S; qa is then unused).
template <int HD, int NS, int MT, bool kQInRegs>
__device__ __forceinline__ void qk_scores_mt(float (&s)[MT][NS][4], const uint32_t (&qa)[MT][kQInRegs ? HD / 16 : 1][4],
                                             uint32_t sq, int q_row0, uint32_t sk, int lane) {
  static_assert(NS % 2 == 0, "n-tiles come in pairs");
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int n = 0; n < NS; ++n) s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.0f;
  const int i = lane >> 3;
  // Each k-step's fragments are all requested before its first mma, so that the mma wait for one
  // ldmatrix latency per k-step rather than one per n-tile pair.
#pragma unroll
  for (int ks = 0; ks < HD / 16; ++ks) {
    uint32_t a[MT][4], b[NS / 2][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      if constexpr (kQInRegs) {
#pragma unroll
        for (int r = 0; r < 4; ++r) a[mt][r] = qa[mt][ks][r];
      } else {
        ldmatrix_x4(a[mt], sq + swizzle<HD>(q_row0 + mt * 16 + (i & 1) * 8 + (lane & 7), ks * 2 + (i >> 1)));
      }
    }
#pragma unroll
    for (int np = 0; np < NS / 2; ++np)
      ldmatrix_x4(b[np], sk + swizzle<HD>(np * 16 + (i >> 1) * 8 + (lane & 7), ks * 2 + (i & 1)));
#pragma unroll
    for (int np = 0; np < NS / 2; ++np)
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma_bf16(s[mt][2 * np], a[mt], b[np][0], b[np][1]);
        mma_bf16(s[mt][2 * np + 1], a[mt], b[np][2], b[np][3]);
      }
  }
}

// o[mt] += P[mt] V for the NS * 8 KV rows of the tile at sv, each V fragment loaded once for the
// MT m-tiles (p = the s array after each m-tile's online_softmax_step).
template <int HD, int NS, int MT>
__device__ __forceinline__ void pv_accumulate_mt(float (&o)[MT][HD / 8][4], const float (&p)[MT][NS][4], uint32_t sv,
                                                 int lane) {
  const int i = lane >> 3;
  // P as bf16 A fragments first (the fp32 scores are then dead, which frees the registers for V's
  // fragments), and each KV k-step's V fragments all requested before its first mma.
  uint32_t pa[NS / 2][MT][4];
#pragma unroll
  for (int kk = 0; kk < NS / 2; ++kk)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      pa[kk][mt][0] = pack_bf16(p[mt][2 * kk][0], p[mt][2 * kk][1]);
      pa[kk][mt][1] = pack_bf16(p[mt][2 * kk][2], p[mt][2 * kk][3]);
      pa[kk][mt][2] = pack_bf16(p[mt][2 * kk + 1][0], p[mt][2 * kk + 1][1]);
      pa[kk][mt][3] = pack_bf16(p[mt][2 * kk + 1][2], p[mt][2 * kk + 1][3]);
    }
#pragma unroll
  for (int kk = 0; kk < NS / 2; ++kk) {
    uint32_t b[HD / 16][4];
#pragma unroll
    for (int dp = 0; dp < HD / 16; ++dp)
      ldmatrix_x4_trans(b[dp], sv + swizzle<HD>(kk * 16 + (i & 1) * 8 + (lane & 7), dp * 2 + (i >> 1)));
#pragma unroll
    for (int dp = 0; dp < HD / 16; ++dp)
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma_bf16(o[mt][2 * dp], pa[kk][mt], b[dp][0], b[dp][1]);
        mma_bf16(o[mt][2 * dp + 1], pa[kk][mt], b[dp][2], b[dp][3]);
      }
  }
}

// O's rows g (accumulators 0, 1) and g + 8 (2, 3) times the online softmax's alpha of each.
template <int HD>
__device__ __forceinline__ void rescale_rows(float (&o)[HD / 8][4], const float (&alpha)[2]) {
#pragma unroll
  for (int d = 0; d < HD / 8; ++d) {
    o[d][0] *= alpha[0];
    o[d][1] *= alpha[0];
    o[d][2] *= alpha[1];
    o[d][3] *= alpha[1];
  }
}

// One KV tile, or a warp's slice of it, for a warp's 16 query rows: S = Q K^T over the NS * 8 KV
// rows starting at tile_row0 of the tiles at sk / sv (context positions from col0), masked to -inf
// where the position reaches the row's horizon or col_end; then one online-softmax step, O
// rescaled, and O += P V.
template <int HD, int NS>
__device__ __forceinline__ void attend_tile(float (&o)[HD / 8][4], float (&m)[2], float (&l)[2],
                                            const uint32_t (&qa)[HD / 16][4], uint32_t sk, uint32_t sv, int tile_row0,
                                            int col0, const int (&horizon)[2], int col_end, float scale_log2,
                                            int lane) {
  const int tq = lane & 3;
  float s[NS][4];
  qk_scores<HD, NS>(s, qa, sk, tile_row0, lane);
#pragma unroll
  for (int n = 0; n < NS; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int col = col0 + n * 8 + 2 * tq + (e & 1);
      if (col >= horizon[e >> 1] || col >= col_end) s[n][e] = -INFINITY;
    }
  }
  float alpha[2];
  online_softmax_step<NS>(s, scale_log2, m, l, alpha);
  rescale_rows<HD>(o, alpha);
  pv_accumulate<HD, NS>(o, s, sv, tile_row0, lane);
}

}  // namespace fg::attn
