// backend/cuda/streamed_timeline.h — `bench kernels --tables streamed_timeline`: the Llama-3.1-8B
// decode step's streamed matmuls back to back, each block's events recorded on the GPU's global
// timer (StreamedEvent), so that a launch's time splits into its parts: how long after the launch
// before it ended its blocks started, their wait for it returned, their first and last weights
// arrived, and they ended. A step spends about 4 µs per streamed launch beyond its read time
// (bench/RESULTS.md); this says where. It needs a build with kStreamedTimeline (streamed_linear.h;
// scripts/device/timeline_variant.sh builds one beside the staged binary) and says so without one.
#pragma once

#include <nlohmann/json.hpp>

namespace fg {
class CudaBackend;
}

namespace fg::cuda {

nlohmann::json bench_streamed_timeline(CudaBackend& backend);

}  // namespace fg::cuda
