// backend/cuda/sampling_bench.cu — the sampler benchmark: fills model-like logits on the device,
// launches the sampling kernel for each (rows, configuration) and reports the median of per-launch
// CUDA-event timings, with the logits read rate it implies.
//
// Logits are approximately normal with a few strong tokens, so that top-p keeps a realistic
// handful-to-hundreds of tokens and min-p / top-k thresholds fall inside the bulk.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <vector>

#include "core/cuda/cuda_check.h"
#include "backend/cuda/sampling.h"
#include "backend/cuda/sampling_bench.h"
#include "sampling/philox.h"

namespace fg::cuda {

namespace {

// logits[r][i] ~ 2.5 * (sum of four uniforms - 2) * sqrt(3), plus +12 on every 4099th token.
__global__ void fill_logits_kernel(float* logits, int64_t n, int64_t vocab, uint64_t seed) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const sampling::Philox4x32 r =
      sampling::philox4x32_10(sampling::Philox4x32{{static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), 7u, 0u}},
                              static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  float sum = 0.0f;
  for (int k = 0; k < 4; ++k) sum += static_cast<float>(r.v[k] >> 8) * (1.0f / 16777216.0f);
  float v = 2.5f * 1.7320508f * (sum - 2.0f);
  if ((i % vocab) % 4099 == 17) v += 12.0f;
  logits[i] = v;
}

struct Config {
  const char* name;
  float temperature;
  int32_t top_k;
  float top_p;
  float min_p;
};

template <typename T>
T* device_array(size_t n) {
  void* p = nullptr;
  FG_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)));
  return static_cast<T*>(p);
}

template <typename T>
void fill(T* device, size_t n, T value) {
  std::vector<T> host(n, value);
  FG_CUDA_CHECK(cudaMemcpy(device, host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
}

int run() {
  constexpr int64_t kVocab = 128256, kMaxRows = 256;
  constexpr int kWarmup = 3, kReps = 25;
  const int64_t rows_list[] = {1, 8, 64, 256};
  const Config configs[] = {
      {"greedy", 0.0f, 0, 1.0f, 0.0f},
      {"T=0.8 top_k=50 top_p=0.9", 0.8f, 50, 0.9f, 0.0f},
      {"T=0.6 top_p=0.9", 0.6f, 0, 0.9f, 0.0f},
      {"T=1.0", 1.0f, 0, 1.0f, 0.0f},
      {"T=1.0 min_p=0.05", 1.0f, 0, 1.0f, 0.05f},
  };

  float* logits = device_array<float>(kMaxRows * kVocab);
  float* temperature = device_array<float>(kMaxRows);
  int32_t* top_k = device_array<int32_t>(kMaxRows);
  float* top_p = device_array<float>(kMaxRows);
  float* min_p = device_array<float>(kMaxRows);
  int64_t* seed = device_array<int64_t>(kMaxRows);
  int64_t* step = device_array<int64_t>(kMaxRows);
  int32_t* ids = device_array<int32_t>(kMaxRows);
  float* logprobs = device_array<float>(kMaxRows);
  cudaStream_t stream;
  cudaEvent_t start, stop;
  FG_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  FG_CUDA_CHECK(cudaEventCreate(&start));
  FG_CUDA_CHECK(cudaEventCreate(&stop));
  {
    const int64_t n = kMaxRows * kVocab;
    fill_logits_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(logits, n, kVocab, 2024);
    FG_CUDA_CHECK(cudaGetLastError());
  }
  std::vector<int64_t> seeds(kMaxRows), steps(kMaxRows);
  for (int64_t r = 0; r < kMaxRows; ++r) {
    seeds[r] = 1000 + r;
    steps[r] = 37 * r;
  }
  FG_CUDA_CHECK(cudaMemcpy(seed, seeds.data(), kMaxRows * sizeof(int64_t), cudaMemcpyHostToDevice));
  FG_CUDA_CHECK(cudaMemcpy(step, steps.data(), kMaxRows * sizeof(int64_t), cudaMemcpyHostToDevice));

  std::printf("sampling benchmark, vocab %lld, median of %d launches (CUDA events)\n", static_cast<long long>(kVocab),
              kReps);
  std::printf("%-28s %6s %12s %14s %12s %12s\n", "configuration", "rows", "median us", "us per row", "logits GB/s",
              "+logprobs us");
  for (const Config& c : configs) {
    fill(temperature, kMaxRows, c.temperature);
    fill(top_k, kMaxRows, c.top_k);
    fill(top_p, kMaxRows, c.top_p);
    fill(min_p, kMaxRows, c.min_p);
    for (int64_t rows : rows_list) {
      float medians[2];
      for (int with_logprobs = 0; with_logprobs < 2; ++with_logprobs) {
        SamplingKernelArgs args;
        args.logits = logits;
        args.rows = rows;
        args.vocab = kVocab;
        args.temperature = temperature;
        args.top_k = top_k;
        args.top_p = top_p;
        args.min_p = min_p;
        args.seed = seed;
        args.step = step;
        args.out_ids = ids;
        args.out_logprobs = with_logprobs ? logprobs : nullptr;
        std::vector<float> times;
        for (int rep = 0; rep < kWarmup + kReps; ++rep) {
          FG_CUDA_CHECK(cudaEventRecord(start, stream));
          launch_sampling_kernel(args, stream);
          FG_CUDA_CHECK(cudaEventRecord(stop, stream));
          FG_CUDA_CHECK(cudaEventSynchronize(stop));
          float ms = 0.0f;
          FG_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
          if (rep >= kWarmup) times.push_back(ms * 1000.0f);
        }
        std::sort(times.begin(), times.end());
        medians[with_logprobs] = times[times.size() / 2];
      }
      const double gbps = static_cast<double>(rows) * kVocab * sizeof(float) / (medians[0] * 1e-6) / 1e9;
      std::printf("%-28s %6lld %12.2f %14.3f %12.1f %12.2f\n", c.name, static_cast<long long>(rows), medians[0],
                  medians[0] / static_cast<double>(rows), gbps, medians[1]);
    }
  }

  FG_CUDA_CHECK(cudaEventDestroy(start));
  FG_CUDA_CHECK(cudaEventDestroy(stop));
  FG_CUDA_CHECK(cudaStreamDestroy(stream));
  for (void* p : {static_cast<void*>(logits), static_cast<void*>(temperature), static_cast<void*>(top_k),
                  static_cast<void*>(top_p), static_cast<void*>(min_p), static_cast<void*>(seed),
                  static_cast<void*>(step), static_cast<void*>(ids), static_cast<void*>(logprobs)})
    FG_CUDA_CHECK(cudaFree(p));
  return 0;
}

}  // namespace

int run_sampling_benchmark() {
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sampling benchmark failed: %s\n", e.what());
    return 1;
  }
}

}  // namespace fg::cuda
