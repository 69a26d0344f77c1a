// bench/common/cuda_timing.cpp — CUDA-event timing (see cuda_timing.h).
#include "bench/common/cuda_timing.h"

#include <vector>

#include "bench/common/stats.h"
#include "core/cuda/cuda_check.h"
#include "core/error.h"

namespace fg::bench {

double median_us(cudaStream_t stream, int reps, int warmup, const std::function<void()>& work) {
  FG_CHECK(reps >= 1, "bench timing: reps must be positive, got {}", reps);
  cudaEvent_t start = nullptr, stop = nullptr;
  FG_CUDA_CHECK(cudaEventCreate(&start));
  FG_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < warmup; ++i) work();
  std::vector<double> us;
  for (int i = 0; i < reps; ++i) {
    FG_CUDA_CHECK(cudaEventRecord(start, stream));
    work();
    FG_CUDA_CHECK(cudaEventRecord(stop, stream));
    FG_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    FG_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    us.push_back(1000.0 * ms);
  }
  FG_CUDA_CHECK(cudaEventDestroy(start));
  FG_CUDA_CHECK(cudaEventDestroy(stop));
  return median(us);
}

double median_graph_launch_us(cudaGraphExec_t exec, cudaStream_t stream, int reps, int warmup) {
  return median_us(stream, reps, warmup, [&] { FG_CUDA_CHECK(cudaGraphLaunch(exec, stream)); });
}

}  // namespace fg::bench
