// backend/cuda/token_mask_kernels.cu — the token mask in place: a pass over the row's words (all
// ones? none?), then -inf over the masked tokens of a constrained row; and the upload of the rows
// the host publishes while the step's forward runs.
#include "core/cuda/cuda_check.h"
#include "backend/cuda/token_mask_kernels.h"

namespace fg::cuda {

namespace {

constexpr int kThreads = 512;

__global__ void __launch_bounds__(kThreads) apply_token_mask_kernel(TokenMaskKernelArgs a) {
  const int64_t row = blockIdx.x;
  const int32_t* mask = a.mask + row * a.words;
  // The bits of the last word that name tokens of the vocabulary; the others are ignored.
  const unsigned last_bits = a.vocab % 32 == 0 ? ~0u : (1u << (a.vocab % 32)) - 1u;
  int all = 1, any = 0;
  for (int64_t w = threadIdx.x; w < a.words; w += kThreads) {
    const unsigned valid = w + 1 == a.words ? last_bits : ~0u;
    const unsigned bits = static_cast<unsigned>(mask[w]) & valid;
    all &= bits == valid;
    any |= bits != 0;
  }
  // Both results are the block's, so every thread takes the same branch below.
  all = __syncthreads_and(all);
  any = __syncthreads_or(any);
  if (all || !any) return;  // nothing masked, or nothing allowed (left as it is)
  float* logits = a.logits + row * a.vocab;
  for (int64_t t = threadIdx.x; t < a.vocab; t += kThreads) {
    const unsigned word = static_cast<unsigned>(mask[t >> 5]);  // one word per warp: a broadcast
    if (((word >> (t & 31)) & 1u) == 0) logits[t] = -__int_as_float(0x7f800000);
  }
}

// A host that has not published after this long never will: trap rather than hang the stream.
constexpr unsigned long long kPublishTimeoutNs = 20'000'000'000ull;

__device__ unsigned long long global_time_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

constexpr int kUploadThreads = 256;

// One block: a thread waits for the publication, then the block brings the changed flags into
// device memory, so that the copy's blocks read them there rather than each from the host.
__global__ void __launch_bounds__(kUploadThreads) wait_for_token_mask_kernel(TokenMaskUploadKernelArgs a) {
  if (threadIdx.x == 0) {
    const uint32_t want = *a.waited + 1;
    const volatile uint32_t* flag = a.published;
    const unsigned long long start = global_time_ns();
    // Wrap-safe "published < want": the counts are per step and wrap after 2^32 steps.
    while (static_cast<int32_t>(*flag - want) < 0) {
      if (global_time_ns() - start > kPublishTimeoutNs) __trap();
      __nanosleep(128);
    }
    *a.waited = want;
  }
  __syncthreads();
  for (int64_t r = threadIdx.x; r < a.rows; r += kUploadThreads) a.changed_on_device[r] = __ldcv(a.changed + r);
}

// A row of host memory is a chain of bus round trips unless many loads are in flight: each
// thread issues kCopyLoads loads before it stores any.
constexpr int kCopyThreads = 1024;
constexpr int kCopyLoads = 8;

__global__ void __launch_bounds__(kCopyThreads) copy_token_mask_rows_kernel(TokenMaskUploadKernelArgs a) {
  const int64_t row = blockIdx.x;
  if (a.changed_on_device[row] == 0) return;
  const int32_t* src = a.mirror + row * a.words;
  int32_t* dst = a.mask + row * a.words;
  for (int64_t base = threadIdx.x; base < a.words; base += int64_t{kCopyThreads} * kCopyLoads) {
    int32_t v[kCopyLoads];
#pragma unroll
    for (int k = 0; k < kCopyLoads; ++k) {
      const int64_t w = base + int64_t{k} * kCopyThreads;
      v[k] = w < a.words ? __ldcv(src + w) : 0;
    }
#pragma unroll
    for (int k = 0; k < kCopyLoads; ++k) {
      const int64_t w = base + int64_t{k} * kCopyThreads;
      if (w < a.words) dst[w] = v[k];
    }
  }
}

}  // namespace

void launch_upload_token_mask(const TokenMaskUploadKernelArgs& args, cudaStream_t stream) {
  wait_for_token_mask_kernel<<<1, kUploadThreads, 0, stream>>>(args);
  FG_CUDA_CHECK(cudaGetLastError());
  if (args.rows == 0) return;
  copy_token_mask_rows_kernel<<<static_cast<unsigned>(args.rows), kCopyThreads, 0, stream>>>(args);
  FG_CUDA_CHECK(cudaGetLastError());
}

void launch_apply_token_mask(const TokenMaskKernelArgs& args, cudaStream_t stream) {
  if (args.rows == 0) return;
  apply_token_mask_kernel<<<static_cast<unsigned>(args.rows), kThreads, 0, stream>>>(args);
  FG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fg::cuda
