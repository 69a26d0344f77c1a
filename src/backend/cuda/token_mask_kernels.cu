// backend/cuda/token_mask_kernels.cu — the token mask in place: a pass over the row's words (all
// ones? none?), then -inf over the masked tokens of a constrained row.
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

}  // namespace

void launch_apply_token_mask(const TokenMaskKernelArgs& args, cudaStream_t stream) {
  if (args.rows == 0) return;
  apply_token_mask_kernel<<<static_cast<unsigned>(args.rows), kThreads, 0, stream>>>(args);
  FG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fg::cuda
