// backend/cuda/phase_read_kernels.cu — see phase_read_kernels.h.
#include "core/cuda/cuda_check.h"
#include "core/cuda/device_info.h"
#include "backend/cuda/grid_barrier.cuh"
#include "core/cuda/pdl.cuh"
#include "backend/cuda/phase_read_kernels.h"
#include "backend/cuda/streaming_load.cuh"

#include <algorithm>

namespace fg::cuda {

namespace {

constexpr int kUnroll = 8;  // 16-byte loads in flight per thread, as read_kernels.cu

// This block's share of phase p, in 16-byte vectors [first, end).
struct Share {
  int64_t first, end;
};

__device__ __forceinline__ Share share_of(const PhaseReads& r, int p) {
  const int64_t begin = r.begin[p] / 16, len = r.begin[p + 1] / 16 - begin;
  return {begin + blockIdx.x * len / gridDim.x, begin + (blockIdx.x + 1) * len / gridDim.x};
}

__device__ __forceinline__ void prefetch_share(const PhaseReads& r, Share s, int64_t prefetch_bytes) {
  const int64_t bytes = min(prefetch_bytes, (s.end - s.first) * 16);
  if (threadIdx.x != 0 || bytes < 16) return;
  const char* p = static_cast<const char*>(r.base) + s.first * 16;
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(static_cast<unsigned>(bytes & ~int64_t{15}))
               : "memory");
}

// One group of this thread's loads from `base`: kUnroll vectors blockDim.x apart, zeros past `end`.
__device__ __forceinline__ void load_group(const uint4* v, int64_t base, int64_t end, uint4 (&x)[kUnroll]) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int64_t i = base + static_cast<int64_t>(u) * blockDim.x;
    x[u] = i < end ? load_streaming(v + i) : make_uint4(0, 0, 0, 0);
  }
}

__device__ __forceinline__ unsigned xor_group(const uint4 (&x)[kUnroll]) {
  unsigned acc = 0;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) acc ^= x[u].x ^ x[u].y ^ x[u].z ^ x[u].w;
  return acc;
}

__device__ __forceinline__ void copy_async_16(uint4* shared, const uint4* global) {
  const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(to), "l"(global) : "memory");
}

// kPersistent: all phases, the grid barrier between them; else phase `first` alone, after the
// launch before (PDL; kFlagWait: after its blocks' arrivals at `barrier`, each launch's blocks
// arriving once, and with grid_wait_at_exit its grid completes after the one before). kStash: the first stash_vecs vectors of the block's share go to shared memory
// (cp.async) before the wait, the rest is read after it.
template <bool kPersistent, bool kStash, bool kFlagWait>
__global__ void phase_read_kernel(const PhaseReads reads, int first, int64_t prefetch_bytes, bool preload,
                                  bool grid_wait_at_exit, int stash_vecs, unsigned* barrier, unsigned* sink) {
  extern __shared__ uint4 stash[];  // [stash_vecs] when kStash; else room that only fills the SM
  allow_dependent_grids();
  const int last = kPersistent ? reads.phases : first + 1;
  unsigned acc = 0;
  const auto* v = static_cast<const uint4*>(reads.base);
  const int64_t step = static_cast<int64_t>(blockDim.x) * kUnroll;
  for (int p = first; p < last; ++p) {
    const Share s = share_of(reads, p);
    prefetch_share(reads, s, prefetch_bytes);  // the weights ahead depend on nothing
    const int64_t stashed = kStash ? min(static_cast<int64_t>(stash_vecs), s.end - s.first) : 0;
    if (kStash) {
      // Each thread copies, and later reads, the vectors i = threadIdx.x (mod blockDim.x): its own.
      for (int64_t i = threadIdx.x; i < stashed; i += blockDim.x) copy_async_16(&stash[i], v + s.first + i);
      asm volatile("cp.async.commit_group;" ::: "memory");
    }
    int64_t base = s.first + stashed + threadIdx.x;
    uint4 x[kUnroll];
    if (preload) load_group(v, base, s.end, x);  // nor do their first loads
    if (kFlagWait && p > 0) grid_barrier_wait(barrier, static_cast<unsigned>(p) * gridDim.x);
    else if (p == first) wait_for_prerequisite_grids();
    else grid_barrier_wait(barrier, static_cast<unsigned>(p - first) * gridDim.x);
    if (!preload) load_group(v, base, s.end, x);
    if (kStash) {
      asm volatile("cp.async.wait_all;" ::: "memory");
      for (int64_t i = threadIdx.x; i < stashed; i += blockDim.x)
        acc ^= stash[i].x ^ stash[i].y ^ stash[i].z ^ stash[i].w;
    }
    for (;;) {
      acc ^= xor_group(x);
      base += step;
      if (base >= s.end) break;
      load_group(v, base, s.end, x);
    }
    if (reads.reduce_width != nullptr) {
      const int width = reads.reduce_width[p];
      for (int i = threadIdx.x; i < width; i += blockDim.x)
        atomicAdd(&reads.sums[i], static_cast<unsigned long long>(i + 1));
    }
    if (kPersistent || kFlagWait) grid_barrier_arrive(barrier);
  }
  if (kFlagWait && first > 0 && grid_wait_at_exit) wait_for_prerequisite_grids();
  // The XOR of every word read, into *sink: it keeps the loads, and lets a test check that the
  // phases were read whole and once (one atomic per warp, after the reads).
  for (int offset = 16; offset > 0; offset >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, offset);
  if ((threadIdx.x & 31) == 0) atomicXor(sink, acc);
}

// blockDim.x a multiple of chunk_vecs: thread t reads vector t % chunk_vecs of rows t / chunk_vecs,
// then rows blockDim.x / chunk_vecs further on, and so on (no division in the loop).
__global__ void column_chunk_read_kernel(const char* base, int64_t rows, int64_t row_bytes, int chunk_vecs,
                                         unsigned* sink) {
  allow_dependent_grids();
  wait_for_prerequisite_grids();
  const int rows_per_pass = blockDim.x / chunk_vecs;
  const char* lane = base + static_cast<int64_t>(blockIdx.x) * chunk_vecs * 16 + (threadIdx.x % chunk_vecs) * 16;
  unsigned acc = 0;
  for (int64_t row = threadIdx.x / chunk_vecs; row < rows; row += static_cast<int64_t>(rows_per_pass) * kUnroll) {
    uint4 x[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t r = row + static_cast<int64_t>(u) * rows_per_pass;
      x[u] = r < rows ? load_streaming(reinterpret_cast<const uint4*>(lane + r * row_bytes)) : make_uint4(0, 0, 0, 0);
    }
    acc ^= xor_group(x);
  }
  for (int offset = 16; offset > 0; offset >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, offset);
  if ((threadIdx.x & 31) == 0) atomicXor(sink, acc);
}

template <bool kPersistent>
void launch(const PhaseReads& reads, const PhaseProbeConfig& config, int first, unsigned* barrier, unsigned* sink,
            cudaStream_t stream) {
  if (config.stash_bytes % 16 != 0 || config.stash_bytes > static_cast<int64_t>(config.shared_bytes))
    FG_CUDA_CHECK(cudaErrorInvalidValue);
  if (kPersistent && config.flag_waits) FG_CUDA_CHECK(cudaErrorInvalidValue);
  constexpr bool kFlags = !kPersistent;
  auto* kernel = config.stash_bytes > 0
                     ? (config.flag_waits ? phase_read_kernel<kPersistent, true, kFlags>
                                          : phase_read_kernel<kPersistent, true, false>)
                     : (config.flag_waits ? phase_read_kernel<kPersistent, false, kFlags>
                                          : phase_read_kernel<kPersistent, false, false>);
  FG_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(config.shared_bytes)));
  const int blocks = config.blocks_per_sm * current_device_sm_count();
  if (kPersistent) {
    // A block that waits for one that never starts would wait forever.
    int resident = 0;
    FG_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, config.threads,
                                                                config.shared_bytes));
    // (fmt does not compile under nvcc: the error is CUDA's own, "too many blocks in cooperative launch")
    if (resident < config.blocks_per_sm) FG_CUDA_CHECK(cudaErrorCooperativeLaunchTooLarge);
  }
  launch_with_pdl(kernel, dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(config.threads)),
                  config.shared_bytes, stream, reads, first, config.prefetch_bytes, config.preload,
                  config.grid_wait_at_exit, static_cast<int>(config.stash_bytes / 16), barrier, sink);
}

}  // namespace

void launch_column_chunk_reads(const void* base, int64_t rows, int64_t row_bytes, int chunk_bytes, int threads,
                               unsigned* sink, cudaStream_t stream) {
  if (chunk_bytes <= 0 || chunk_bytes % 16 != 0 || row_bytes % chunk_bytes != 0 || threads % (chunk_bytes / 16) != 0)
    FG_CUDA_CHECK(cudaErrorInvalidValue);
  launch_with_pdl(column_chunk_read_kernel, dim3(static_cast<unsigned>(row_bytes / chunk_bytes)),
                  dim3(static_cast<unsigned>(threads)), 0, stream, static_cast<const char*>(base), rows, row_bytes,
                  chunk_bytes / 16, sink);
}

void launch_phase_reads_chained(const PhaseReads& reads, const PhaseProbeConfig& config, unsigned* counter,
                                unsigned* sink, cudaStream_t stream) {
  if (config.flag_waits) FG_CUDA_CHECK(cudaMemsetAsync(counter, 0, sizeof(unsigned), stream));
  for (int p = 0; p < reads.phases; ++p) launch<false>(reads, config, p, counter, sink, stream);
}

void launch_phase_reads_persistent(const PhaseReads& reads, const PhaseProbeConfig& config, unsigned* barrier,
                                   unsigned* sink, cudaStream_t stream) {
  FG_CUDA_CHECK(cudaMemsetAsync(barrier, 0, sizeof(unsigned), stream));
  launch<true>(reads, config, 0, barrier, sink, stream);
}

}  // namespace fg::cuda
