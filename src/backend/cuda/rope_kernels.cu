// backend/cuda/rope_kernels.cu — RoPE on q and k fused with the paged KV-cache write: one block
// per token, each thread rotating eight (e, e + hd/2) pairs of one head with 16-byte accesses (in
// place, or from the columns of a q/k/v span into q and k), and copying rotated k and v into the
// token's cache slot (BF16 or e4m3: kv_cache_write.h) unless the slot is negative (a padded token:
// DESIGN.md's contract says its slot is -1 and nothing may be written for it). The rotation is
// rope_rotate (qkv_rope.h), which the q/k/v matmul's fused store shares, so both give the same bits.
#include "backend/cuda/bf16_vec.cuh"
#include "core/cuda/cuda_check.h"
#include "core/cuda/pdl.cuh"
#include "backend/cuda/qkv_rope.h"
#include "backend/cuda/rope_kernels.h"

namespace fg::cuda {

namespace {

// q, k and v may be the source's own rows (in place), so neither side is __restrict__.
__global__ void __launch_bounds__(256) rope_cache_kernel(RopeSource src, bf16* q, bf16* k, bf16* v,
                                                         const int32_t* __restrict__ positions,
                                                         const int64_t* __restrict__ slot_mapping,
                                                         const float* __restrict__ cos_sin, const KvCacheWrite cache,
                                                         int num_heads, int num_kv_heads, int head_dim,
                                                         int max_positions) {
  allow_dependent_grids();  // PDL: the attention kernel may launch; it waits for this grid
  // The token's position and slot (the step's metadata, copied before the chain's first kernel)
  // and the cos/sin of the thread's first item (a constant table) do not depend on the kernel
  // before (the q/k/v projection): they are read before the wait, which leaves only q and k.
  const int64_t token = blockIdx.x;
  const int pos = min(max(positions[token], 0), max_positions - 1);
  const int64_t slot = slot_mapping[token];
  const bool write_cache = slot >= 0 && slot < cache.num_slots;
  const int half = head_dim / 2, chunks = half / 8;  // 8-pair chunks per head
  const int64_t q_width = static_cast<int64_t>(num_heads) * head_dim;
  const int64_t kv_stride = static_cast<int64_t>(num_kv_heads) * head_dim;
  const float* cos_row = cos_sin + static_cast<int64_t>(pos) * head_dim;
  const float* sin_row = cos_row + half;
  const int rot_items = (num_heads + num_kv_heads) * chunks;
  float c[8], s[8];
  auto load_cos_sin = [&](int e0) {
    *reinterpret_cast<float4*>(c) = *reinterpret_cast<const float4*>(cos_row + e0);
    *reinterpret_cast<float4*>(c + 4) = *reinterpret_cast<const float4*>(cos_row + e0 + 4);
    *reinterpret_cast<float4*>(s) = *reinterpret_cast<const float4*>(sin_row + e0);
    *reinterpret_cast<float4*>(s + 4) = *reinterpret_cast<const float4*>(sin_row + e0 + 4);
  };
  if (static_cast<int>(threadIdx.x) < rot_items) load_cos_sin((threadIdx.x % chunks) * 8);
  wait_for_prerequisite_grids();

  // Rotation: chunk c of head h, over the q heads then the k heads.
  for (int item = threadIdx.x; item < rot_items; item += blockDim.x) {
    const int head = item / chunks, e0 = (item % chunks) * 8;
    const bool is_k = head >= num_heads;
    const int64_t head_offset = static_cast<int64_t>(is_k ? head - num_heads : head) * head_dim;
    const bf16* from = is_k ? src.k + token * src.kv_stride + head_offset : src.q + token * src.q_stride + head_offset;
    bf16* base = is_k ? k + token * kv_stride + head_offset : q + token * q_width + head_offset;
    float a[8], b[8], ra[8], rb[8];
    unpack_bf16x8(*reinterpret_cast<const uint4*>(from + e0), a);
    unpack_bf16x8(*reinterpret_cast<const uint4*>(from + half + e0), b);
    if (item != static_cast<int>(threadIdx.x)) load_cos_sin(e0);
#pragma unroll
    for (int e = 0; e < 8; ++e) rope_rotate(a[e], b[e], c[e], s[e], ra[e], rb[e]);
    const uint4 out_a = pack_bf16x8(ra), out_b = pack_bf16x8(rb);
    *reinterpret_cast<uint4*>(base + e0) = out_a;
    *reinterpret_cast<uint4*>(base + half + e0) = out_b;
    if (is_k && write_cache) {
      const int64_t dst = slot * kv_stride + head_offset;
      cache.store8(true, dst + e0, out_a);
      cache.store8(true, dst + half + e0, out_b);
    }
  }

  const bool copy_v = src.v != v;
  if (!write_cache && !copy_v) return;
  const int v_vecs = static_cast<int>(kv_stride / 8);
  const uint4* v_src = reinterpret_cast<const uint4*>(src.v + token * src.kv_stride);
  uint4* v_out = reinterpret_cast<uint4*>(v + token * kv_stride);
  for (int i = threadIdx.x; i < v_vecs; i += blockDim.x) {
    const uint4 value = v_src[i];
    if (copy_v) v_out[i] = value;
    if (write_cache) cache.store8(false, slot * kv_stride + i * 8, value);
  }
}

// The q/k-norm form: one thread per 8-element chunk of every q, k and v head of every token, laid
// out as head_rms_norm_kernel lays out its rows (hd / 8 consecutive lanes per head), so that the
// norm's sum of squares meets over the same shuffle tree and gives its bits. The normalized chunk
// is rounded to BF16 (what head_rms_norm stores), exchanged with the lane holding its RoPE partner
// (hd / 2 further: hd / 16 lanes away) and rotated by rope_rotate, as rope_cache_kernel would. The
// v heads' lanes run the same shuffles (every lane must) and copy v to the cache.
__global__ void __launch_bounds__(256) qk_norm_rope_cache_kernel(
    bf16* __restrict__ q, bf16* __restrict__ k, const bf16* __restrict__ v, const bf16* __restrict__ q_norm,
    const bf16* __restrict__ k_norm, float eps, const int32_t* __restrict__ positions,
    const int64_t* __restrict__ slot_mapping, const float* __restrict__ cos_sin, const KvCacheWrite cache, int64_t n,
    int num_heads, int num_kv_heads, int head_dim, int max_positions) {
  allow_dependent_grids();  // PDL: the attention kernel may launch; it waits for this grid
  const int group = head_dim / 8, half_group = group / 2;
  const int heads = num_heads + 2 * num_kv_heads;  // a token's q, k and v heads
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t row = thread / group;
  const int part = static_cast<int>(thread % group);
  const int64_t token = row / heads;
  const int head = static_cast<int>(row % heads);
  const bool valid = token < n;
  const bool is_q = head < num_heads, is_v = head >= num_heads + num_kv_heads;
  const int kv_head = is_q ? 0 : head - num_heads - (is_v ? num_kv_heads : 0);
  const int64_t q_width = static_cast<int64_t>(num_heads) * head_dim;
  const int64_t kv_width = static_cast<int64_t>(num_kv_heads) * head_dim;

  // Before the wait: what the q/k/v matmul does not write (the norm weight, the token's position,
  // slot and angles).
  const uint4 zero = make_uint4(0, 0, 0, 0);
  const uint4 w_vec = is_v ? zero : __ldg(reinterpret_cast<const uint4*>(is_q ? q_norm : k_norm) + part);
  int64_t slot = -1;
  float c[8] = {}, s[8] = {};
  if (valid) {
    slot = slot_mapping[token];
    const int pos = min(max(positions[token], 0), max_positions - 1);
    const float* cos_row = cos_sin + static_cast<int64_t>(pos) * head_dim + (part % half_group) * 8;
    *reinterpret_cast<float4*>(c) = *reinterpret_cast<const float4*>(cos_row);
    *reinterpret_cast<float4*>(c + 4) = *reinterpret_cast<const float4*>(cos_row + 4);
    *reinterpret_cast<float4*>(s) = *reinterpret_cast<const float4*>(cos_row + head_dim / 2);
    *reinterpret_cast<float4*>(s + 4) = *reinterpret_cast<const float4*>(cos_row + head_dim / 2 + 4);
  }
  const bool write_cache = slot >= 0 && slot < cache.num_slots;
  wait_for_prerequisite_grids();

  bf16* chunk = nullptr;
  if (valid) {
    chunk = is_q ? q + token * q_width : (is_v ? const_cast<bf16*>(v) : k) + token * kv_width;
    chunk += static_cast<int64_t>(is_q ? head : kv_head) * head_dim + part * 8;
  }
  const uint4 raw = valid ? *reinterpret_cast<const uint4*>(chunk) : zero;
  float x[8];
  unpack_bf16x8(raw, x);
  float sum_sq = 0.0f;
#pragma unroll
  for (int e = 0; e < 8; ++e) sum_sq += x[e] * x[e];
  for (int offset = group / 2; offset > 0; offset >>= 1) sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, offset);
  const float inv_rms = rsqrtf(sum_sq / static_cast<float>(head_dim) + eps);
  float wf[8], o[8];
  unpack_bf16x8(w_vec, wf);
#pragma unroll
  for (int e = 0; e < 8; ++e) o[e] = wf[e] * (x[e] * inv_rms);
  const uint4 normed = pack_bf16x8(o);
  uint4 partner;
  partner.x = __shfl_xor_sync(0xffffffffu, normed.x, half_group);
  partner.y = __shfl_xor_sync(0xffffffffu, normed.y, half_group);
  partner.z = __shfl_xor_sync(0xffffffffu, normed.z, half_group);
  partner.w = __shfl_xor_sync(0xffffffffu, normed.w, half_group);
  if (!valid) return;
  if (is_v) {
    if (write_cache) cache.store8(false, slot * kv_width + kv_head * head_dim + part * 8, raw);
    return;
  }
  const bool first_half = part < half_group;
  float a[8], b[8], ra[8], rb[8];
  unpack_bf16x8(first_half ? normed : partner, a);
  unpack_bf16x8(first_half ? partner : normed, b);
#pragma unroll
  for (int e = 0; e < 8; ++e) rope_rotate(a[e], b[e], c[e], s[e], ra[e], rb[e]);
  const uint4 out = pack_bf16x8(first_half ? ra : rb);
  *reinterpret_cast<uint4*>(chunk) = out;
  if (!is_q && write_cache) cache.store8(true, slot * kv_width + kv_head * head_dim + part * 8, out);
}

}  // namespace

void launch_qk_norm_rope_and_cache_write(bf16* q, bf16* k, const bf16* v, const bf16* q_norm, const bf16* k_norm,
                                         float eps, const int32_t* positions, const int64_t* slot_mapping,
                                         const float* cos_sin, const KvCacheWrite& cache, int64_t n, int num_heads,
                                         int num_kv_heads, int head_dim, int64_t max_positions, cudaStream_t stream) {
  if (n == 0) return;
  constexpr int kThreads = 256;
  const int64_t threads = n * (num_heads + 2 * num_kv_heads) * (head_dim / 8);
  launch_with_pdl(qk_norm_rope_cache_kernel, dim3(static_cast<unsigned>((threads + kThreads - 1) / kThreads)),
                  dim3(kThreads), 0, stream, q, k, v, q_norm, k_norm, eps, positions, slot_mapping, cos_sin, cache, n,
                  num_heads, num_kv_heads, head_dim, static_cast<int>(max_positions));
}

void launch_rope_and_cache_write(const RopeSource& src, bf16* q, bf16* k, bf16* v, const int32_t* positions,
                                 const int64_t* slot_mapping, const float* cos_sin, const KvCacheWrite& cache,
                                 int64_t n, int num_heads, int num_kv_heads, int head_dim, int64_t max_positions,
                                 cudaStream_t stream) {
  if (n == 0) return;
  const int rot_items = (num_heads + num_kv_heads) * (head_dim / 16);
  const int threads = rot_items >= 256 ? 256 : ((rot_items + 31) / 32) * 32;
  launch_with_pdl(rope_cache_kernel, dim3(static_cast<unsigned>(n)), dim3(threads), 0, stream, src, q, k, v, positions,
                  slot_mapping, cos_sin, cache, num_heads, num_kv_heads, head_dim, static_cast<int>(max_positions));
}

}  // namespace fg::cuda
