// backend/cuda/graph_timing.h — the timing of an instantiated CUDA graph that the benchmarks share.
#pragma once

#include <cuda_runtime.h>

#include <functional>

namespace fg::cuda {

// Median time in microseconds of `work` (which enqueues on `stream`; CUDA events around each
// run), over `reps` timed runs after `warmup` untimed ones. Raises fg::Error on a CUDA error.
double median_us(cudaStream_t stream, int reps, int warmup, const std::function<void()>& work);

// Median time in microseconds of one launch of `exec` on `stream` (CUDA events around each
// launch), over `reps` timed launches after `warmup` untimed ones. Raises fg::Error on a CUDA error.
double median_graph_launch_us(cudaGraphExec_t exec, cudaStream_t stream, int reps, int warmup = 3);

}  // namespace fg::cuda
