// backend/cuda/streamed_linear.cpp — StreamedLinear: the tensor maps of the weights and token
// rows the streamed kernel reads (encoded through the driver entry point, so no link against libcuda),
// then the launch.
#include "backend/cuda/streamed_linear.h"

#include <cudaTypedefs.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "core/cuda/cuda_check.h"
#include "core/error.h"

namespace fg::cuda {

namespace {

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult status{};
    FG_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &status));
    FG_CHECK(status == cudaDriverEntryPointSuccess && fn != nullptr,
             "cuda backend: the driver has no cuTensorMapEncodeTiled (query status {}); the streamed linear needs "
             "sm_90 and CUDA 12+",
             static_cast<int>(status));
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

// The element types of the streamed matrices.
enum class Element { kBf16, kE4m3 };

// The map of a [rows, in] matrix of BF16 or e4m3 (bytes) in boxes of box_rows x kStreamedBoxK, zeros out of bounds
// (rows past the end, k past `in`). No L2 promotion: with 256-byte promotion every streamed shape
// read 2-7% slower (bench/RESULTS.md, 2026-12-01: the 8B LM head at M = 1 248 -> 236
// us, the 8B gate/up 29.0 -> 27.6); 64- and 128-byte promotion measured the same as none.
CUtensorMap tensor_map(const void* data, Element element, int64_t rows, int64_t in, uint32_t box_rows,
                       const char* what) {
  CUtensorMap map;
  const bool bf16 = element == Element::kBf16;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(in), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(in) * (bf16 ? 2 : 1)};
  const cuuint32_t box[2] = {kStreamedBoxK, box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = tensor_map_encoder()(&map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_UINT8,
                                          2, const_cast<void*>(data),
                                          dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                          CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  FG_CHECK(r == CUDA_SUCCESS, "cuda backend: cuTensorMapEncodeTiled failed ({}) for the {} x {} {} at {}",
           static_cast<int>(r), rows, in, what, static_cast<const void*>(data));
  return map;
}

void check_blocks_per_sm(int blocks_per_sm) {
  FG_CHECK(blocks_per_sm >= 1 && blocks_per_sm <= kStreamedBlocksPerSm,
           "cuda backend: the streamed linear takes 1 to {} blocks per SM, not {}", kStreamedBlocksPerSm, blocks_per_sm);
}

}  // namespace

struct StreamedLinear::Maps {
  // Keyed by (address, element type, rows, in, box rows): a map encodes nothing else of the matrix.
  using Key = std::tuple<const void*, Element, int64_t, int64_t, uint32_t>;
  std::map<Key, CUtensorMap> weights, tokens;

  static const CUtensorMap& find_or_make(std::map<Key, CUtensorMap>& maps, const void* data, Element element,
                                         int64_t rows, int64_t in, uint32_t box_rows, const char* what) {
    const Key key{data, element, rows, in, box_rows};
    auto it = maps.find(key);
    if (it == maps.end()) it = maps.emplace(key, tensor_map(data, element, rows, in, box_rows, what)).first;
    return it->second;
  }

  // The three maps a launch reads: the weight w [rows, in] in tiles and in passes of pass_tiles
  // tiles (a full pass's tiles are adjacent rows: one copy brings them all), and the n token rows
  // of x. The token box is n rows high: rows n..15 of a stage's token slot are never written, and
  // feed only output rows past n (each output row of the tensor core reads its own token row).
  struct Launch {
    const CUtensorMap &weights, &tokens, &pass_weights;
  };
  Launch for_launch(const void* x, const void* w, int64_t rows, int64_t in, int64_t n, int pass_tiles,
                    Element element = Element::kBf16) {
    return {find_or_make(weights, w, element, rows, in, kStreamedBoxRows, "weight"),
            find_or_make(tokens, x, element, n, in, static_cast<uint32_t>(n), "token rows"),
            find_or_make(weights, w, element, rows, in, static_cast<uint32_t>(pass_tiles * kStreamedBoxRows),
                         "weight")};
  }
};

StreamedLinear::StreamedLinear(int sm_count) : sm_count_(sm_count), maps_(std::make_unique<Maps>()) {
  configure_streamed_linear_kernels();
  const size_t units = static_cast<size_t>(streamed_full_pass_units(sm_count));
  FG_CUDA_CHECK(cudaMalloc(&slice_sums_, units * kStreamedSliceSumFloats * sizeof(float)));
  FG_CUDA_CHECK(cudaMalloc(&arrivals_, units * sizeof(int)));
  FG_CUDA_CHECK(cudaMemset(arrivals_, 0, units * sizeof(int)));
  // The memset runs on the legacy stream, which does not order the non-blocking streams that
  // launch the kernel: finish it here.
  FG_CUDA_CHECK(cudaDeviceSynchronize());
}

StreamedLinear::~StreamedLinear() {
  cudaFree(slice_sums_);  // unchecked: a destructor must not throw
  cudaFree(arrivals_);
}

StreamedGrid StreamedLinear::plain_grid(int64_t n, int64_t in, int64_t out_features, int& k_slices,
                                        int blocks_per_sm) const {
  if (k_slices == 0) k_slices = streamed_k_slices(out_features, in, sm_count_);
  if (blocks_per_sm == 0) blocks_per_sm = streamed_blocks_per_sm(out_features, k_slices, n, sm_count_);
  const int64_t tiles = (out_features + kStreamedBoxRows - 1) / kStreamedBoxRows;
  const int64_t chunks = (in + kStreamedBoxK - 1) / kStreamedBoxK;
  FG_CHECK(k_slices >= 1 && k_slices <= chunks &&
               (k_slices == 1 || k_slices * tiles <= streamed_full_pass_units(sm_count_)),
           "cuda backend: the streamed linear cannot cut k = {} into {} slices over {} rows (at most {} chunks of {}, "
           "and {} tile slices)",
           in, k_slices, out_features, chunks, kStreamedBoxK, streamed_full_pass_units(sm_count_));
  check_blocks_per_sm(blocks_per_sm);
  return streamed_grid(out_features, k_slices, blocks_per_sm, sm_count_);
}

void StreamedLinear::run(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* bias,
                         const LinearOutputs& out, bool out_f32, int64_t n, int64_t in, int64_t out_features,
                         cudaStream_t stream, int k_slices, int blocks_per_sm) {
  if (n == 0 || out_features == 0) return;
  FG_CHECK(!out.add_to_output || !out_f32, "cuda backend: the streamed linear adds to BF16 outputs only");
  const StreamedGrid grid = plain_grid(n, in, out_features, k_slices, blocks_per_sm);
  const Maps::Launch maps = maps_->for_launch(x, w, out_features, in, n, grid.pass_tiles);
  launch_streamed_linear(maps.weights, maps.tokens, maps.pass_weights, bias, out, out_f32, n, in, out_features,
                         k_slices, grid, slice_sums_, arrivals_, stream);
}

void StreamedLinear::run_fp8(const uint8_t* x, const float* x_scales, const uint8_t* w, const float* w_scales,
                             const __nv_bfloat16* bias, const LinearOutputs& out, int64_t n, int64_t in,
                             int64_t out_features, cudaStream_t stream, int k_slices, int blocks_per_sm) {
  if (n == 0 || out_features == 0) return;
  FG_CHECK(in % 16 == 0, "cuda backend: the streamed FP8 linear takes rows of a multiple of 16 bytes, got {}", in);
  const StreamedGrid grid = plain_grid(n, in, out_features, k_slices, blocks_per_sm);
  const Maps::Launch maps = maps_->for_launch(x, w, out_features, in, n, grid.pass_tiles, Element::kE4m3);
  launch_streamed_fp8_linear(maps.weights, maps.tokens, maps.pass_weights, Fp8Scales{x_scales, w_scales}, bias, out,
                             n, in, out_features, k_slices, grid, slice_sums_, arrivals_, stream);
}

void StreamedLinear::run_gated(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* out, int64_t n,
                               int64_t in, int64_t intermediate, cudaStream_t stream, int blocks_per_sm,
                               const InputNorm& norm) {
  if (n == 0 || intermediate == 0) return;
  FG_CHECK(gated_linear_applies(intermediate, in, sm_count_),
           "cuda backend: the gated streamed linear does not take a {} x {} gate/up span", 2 * intermediate, in);
  // The span's own choice, so that a gated run reads like the plain run of the span.
  if (blocks_per_sm == 0) blocks_per_sm = streamed_blocks_per_sm(2 * intermediate, 1, n, sm_count_);
  check_blocks_per_sm(blocks_per_sm);
  const StreamedGrid grid = streamed_gated_grid(intermediate, blocks_per_sm, sm_count_);
  const Maps::Launch maps = maps_->for_launch(x, w, 2 * intermediate, in, n, grid.pass_tiles);
  launch_streamed_gated_linear(maps.weights, maps.tokens, maps.pass_weights, out, n, in, intermediate, grid, norm,
                               stream);
}

void StreamedLinear::run_gated_fp8(const uint8_t* x, const float* x_scales, const uint8_t* w, const float* w_scales,
                                   __nv_bfloat16* out, int64_t n, int64_t in, int64_t intermediate,
                                   cudaStream_t stream) {
  if (n == 0 || intermediate == 0) return;
  FG_CHECK(in % 16 == 0 && gated_linear_applies(intermediate, in, sm_count_, 1),
           "cuda backend: the gated streamed FP8 linear does not take a {} x {} gate/up span", 2 * intermediate, in);
  // The span's own choice, as run_gated's.
  const int blocks_per_sm = streamed_blocks_per_sm(2 * intermediate, 1, n, sm_count_);
  const StreamedGrid grid = streamed_gated_grid(intermediate, blocks_per_sm, sm_count_);
  const Maps::Launch maps = maps_->for_launch(x, w, 2 * intermediate, in, n, grid.pass_tiles, Element::kE4m3);
  launch_streamed_gated_fp8_linear(maps.weights, maps.tokens, maps.pass_weights, Fp8Scales{x_scales, w_scales}, out,
                                   n, in, intermediate, grid, stream);
}

void StreamedLinear::run_qkv_rope(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* bias,
                                  const LinearOutputs& out, const QkvRope& rope, int64_t n, int64_t in, int64_t rows,
                                  cudaStream_t stream, int blocks_per_sm) {
  if (n == 0 || rows == 0) return;
  const StreamedGrid grid = qkv_rope_grid(out, rope, in, rows, blocks_per_sm, 2);
  const Maps::Launch maps = maps_->for_launch(x, w, rows, in, n, grid.pass_tiles);
  launch_streamed_qkv_rope(maps.weights, maps.tokens, maps.pass_weights, bias, out, rope, n, in, rows, grid,
                           stream);
}

void StreamedLinear::run_qkv_rope_fp8(const uint8_t* x, const float* x_scales, const uint8_t* w,
                                      const float* w_scales, const __nv_bfloat16* bias, const LinearOutputs& out,
                                      const QkvRope& rope, int64_t n, int64_t in, int64_t rows, cudaStream_t stream) {
  if (n == 0 || rows == 0) return;
  FG_CHECK(in % 16 == 0, "cuda backend: the streamed FP8 linear takes rows of a multiple of 16 bytes, got {}", in);
  const StreamedGrid grid = qkv_rope_grid(out, rope, in, rows, 0, 1);
  const Maps::Launch maps = maps_->for_launch(x, w, rows, in, n, grid.pass_tiles, Element::kE4m3);
  const Fp8Scales scales{x_scales, w_scales};
  launch_streamed_qkv_rope(maps.weights, maps.tokens, maps.pass_weights, bias, out, rope, n, in, rows, grid, stream,
                           &scales);
}

StreamedGrid StreamedLinear::qkv_rope_grid(const LinearOutputs& out, const QkvRope& rope, int64_t in, int64_t rows,
                                           int blocks_per_sm, int value_bytes) const {
  FG_CHECK(qkv_rope_streamed_applies(rows, in, rope.head_dim, sm_count_, value_bytes) && out.parts == 3 &&
               out.begin[3] == rows && out.begin[2] % rope.head_dim == 0 && out.begin[1] % rope.head_dim == 0,
           "cuda backend: the streamed q/k/v linear with RoPE does not take a {} x {} span in parts of {}, {} and {} "
           "rows with heads of {}",
           rows, in, out.begin[1], out.begin[2] - out.begin[1], out.begin[3] - out.begin[2], rope.head_dim);
  // Two blocks per SM at every n, not the plain span's choice (one per SM above 8 rows): a RoPE
  // pass stays within half a head (8 tile pairs at head_dim 128), and the 8B span's 384 pairs over
  // one block per SM give each block 3, so that most blocks' ranges cross a half head and walk
  // all of k twice in shorter passes; over two per SM each block takes 2. Measured
  // (bench/RESULTS.md, 2026-12-02, bench latency, 8B, context 512, graph): batches 9,
  // 12 and 16 (16-row graphs) 4.835-4.860 -> 4.566-4.603 ms, batch 1 level (4.144-4.175 ->
  // 4.154-4.177). At n <= 8 one per SM was slower still (the q/k/v launch 13.3 -> 24.3 us).
  if (blocks_per_sm == 0) blocks_per_sm = kStreamedBlocksPerSm;
  check_blocks_per_sm(blocks_per_sm);
  return streamed_qkv_rope_grid(rows, blocks_per_sm, sm_count_);
}

}  // namespace fg::cuda
