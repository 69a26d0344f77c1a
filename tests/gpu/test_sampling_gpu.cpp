// tests/gpu/test_sampling_gpu.cpp — the CUDA sampler against the CPU reference (sampling/
// cpu_sampler.h) on random logits and mixed parameters: greedy ids must be identical, sampled ids
// identical in at least 99.9% of rows (by construction they should all be: the same per-token
// float formulas and exact integer masses; the rate is printed), logprobs identical. Also: odd
// vocabularies and unaligned rows (the scalar load path), masked and NaN rows, row-position
// independence, and a CUDA-graph capture with padded neutral rows against an eager launch.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend/cuda/sampling.h"
#include "core/thread_pool.h"
#include "gpu/gpu_test_support.h"
#include "sampling/cpu_sampler.h"
#include "sampling/sampling_math.h"
#include "sampling/sampling_params.h"

namespace fg {
namespace {

using gpu_test::device_alloc;
using gpu_test::DeviceBuffer;
using gpu_test::download;
using gpu_test::poison;
using gpu_test::upload;

constexpr float kInf = std::numeric_limits<float>::infinity();

// Device copies of sampling parameters, `capacity` rows (>= the rows sampled, like the persistent
// step buffers).
struct DeviceParams {
  DeviceBuffer temperature, top_k, top_p, min_p, seed, step;
  SamplingTensors tensors;

  explicit DeviceParams(int64_t capacity)
      : temperature(device_alloc(DType::kF32, {capacity})),
        top_k(device_alloc(DType::kI32, {capacity})),
        top_p(device_alloc(DType::kF32, {capacity})),
        min_p(device_alloc(DType::kF32, {capacity})),
        seed(device_alloc(DType::kI64, {capacity})),
        step(device_alloc(DType::kI64, {capacity})) {
    tensors = {temperature.tensor, top_k.tensor, top_p.tensor, min_p.tensor, seed.tensor, step.tensor};
  }

  void upload_from(const std::vector<SamplingParams>& params) {
    const int64_t capacity = temperature.tensor.dim(0);
    HostSamplingBuffers host(capacity);  // rows past params stay neutral
    for (size_t r = 0; r < params.size(); ++r) host.set(static_cast<int64_t>(r), params[r]);
    auto copy = [](const Tensor& dst, const Tensor& src) {
      FG_CUDA_CHECK(cudaMemcpy(dst.data, src.data, src.nbytes(), cudaMemcpyHostToDevice));
    };
    copy(tensors.temperature, host.tensors().temperature);
    copy(tensors.top_k, host.tensors().top_k);
    copy(tensors.top_p, host.tensors().top_p);
    copy(tensors.min_p, host.tensors().min_p);
    copy(tensors.seed, host.tensors().seed);
    copy(tensors.step, host.tensors().step);
  }
};

// Logits like a model's: a normal bulk of a random scale, a few strong tokens, some exact ties
// (values rounded to 1/8) in some rows, and some masked (-inf) tokens.
std::vector<float> random_logits(int64_t rows, int64_t vocab, std::mt19937& rng) {
  std::vector<float> logits(static_cast<size_t>(rows * vocab));
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = logits.data() + r * vocab;
    const float scale = 0.5f + 4.0f * uniform(rng);
    const bool ties = uniform(rng) < 0.3f;
    for (int64_t i = 0; i < vocab; ++i) {
      float v = scale * normal(rng);
      if (ties) v = std::round(v * 8.0f) / 8.0f;
      row[i] = v;
    }
    const int spikes = static_cast<int>(uniform(rng) * 6);
    for (int s = 0; s < spikes; ++s) row[static_cast<int64_t>(uniform(rng) * vocab) % vocab] += 3.0f * scale + 4.0f;
    if (uniform(rng) < 0.2f)
      for (int64_t i = 0; i < vocab; i += 3) row[i] = -kInf;
  }
  return logits;
}

std::vector<SamplingParams> random_params(int64_t rows, int64_t vocab, std::mt19937& rng) {
  std::uniform_int_distribution<int> pick(0, 99);
  std::vector<SamplingParams> out;
  for (int64_t r = 0; r < rows; ++r) {
    SamplingParams p;
    if (pick(rng) >= 25) {  // else neutral
      p.temperature = 0.2f + static_cast<float>(pick(rng)) / 60.0f;
      const int k = pick(rng);
      p.top_k = k < 35 ? 0 : k < 45 ? 1 : k < 55 ? 5 : k < 70 ? 50 : k < 85 ? 1000 : static_cast<int32_t>(vocab);
      const int q = pick(rng);
      p.top_p = q < 35 ? 1.0f : q < 55 ? 0.95f : q < 70 ? 0.9f : q < 85 ? 0.5f : 0.99f;
      const int m = pick(rng);
      p.min_p = m < 60 ? 0.0f : m < 80 ? 0.05f : 0.2f;
    }
    p.seed = static_cast<int64_t>((static_cast<uint64_t>(rng()) << 32) | rng());
    p.step = rng() % 100000;
    out.push_back(p);
  }
  return out;
}

struct Outputs {
  std::vector<int32_t> ids;
  std::vector<float> logprobs;
};

Outputs run_gpu(const std::vector<float>& logits, int64_t rows, int64_t vocab,
                const std::vector<SamplingParams>& params, bool logprobs) {
  DeviceBuffer d_logits = device_alloc(DType::kF32, {rows, vocab});
  upload(d_logits.tensor, logits);
  DeviceParams d_params(rows + 5);
  d_params.upload_from(params);
  DeviceBuffer d_ids = device_alloc(DType::kI32, {rows});
  DeviceBuffer d_lp = device_alloc(DType::kF32, {rows});
  poison(d_ids.tensor);
  poison(d_lp.tensor);
  const size_t ws = cuda::sampling_workspace_bytes(rows, vocab);
  DeviceBuffer d_ws = device_alloc(DType::kI32, {static_cast<int64_t>((ws + 3) / 4)});
  if (logprobs) {
    cuda::launch_sampling(d_logits.tensor, d_params.tensors, d_ids.tensor, d_ws.tensor.data, ws, nullptr, d_lp.tensor);
  } else {
    cuda::launch_sampling(d_logits.tensor, d_params.tensors, d_ids.tensor, d_ws.tensor.data, ws, nullptr);
  }
  FG_CUDA_CHECK(cudaDeviceSynchronize());
  Outputs out;
  out.ids = download<int32_t>(d_ids.tensor);
  if (logprobs) out.logprobs = download<float>(d_lp.tensor);
  return out;
}

Outputs run_cpu(const std::vector<float>& logits, int64_t rows, int64_t vocab,
                const std::vector<SamplingParams>& params, ThreadPool& pool) {
  HostSamplingBuffers host(rows);
  for (int64_t r = 0; r < rows; ++r) host.set(r, params[r]);
  Outputs out;
  out.ids.assign(static_cast<size_t>(rows), -1);
  out.logprobs.assign(static_cast<size_t>(rows), 0.0f);
  sample_cpu(Tensor(const_cast<float*>(logits.data()), DType::kF32, {rows, vocab}), host.tensors(),
             Tensor(out.ids.data(), DType::kI32, {rows}), &pool, Tensor(out.logprobs.data(), DType::kF32, {rows}));
  return out;
}

// Explains a sampled mismatch: where each candidate sits relative to the CPU's draw.
void print_mismatch(const float* row, int64_t vocab, const SamplingParams& p, int32_t gpu_id) {
  const RowSampleDetail d = sample_row_cpu(row, vocab, p, false);
  std::printf(
      "  mismatch: T=%g top_k=%d top_p=%g min_p=%g seed=%lld step=%lld | |B|=%lld W_B=%llu top-k %s %.9g "
      "top-p %s %.9g |K|=%lld W_K=%llu u=%llu\n",
      p.temperature, p.top_k, p.top_p, p.min_p, static_cast<long long>(p.seed), static_cast<long long>(p.step),
      static_cast<long long>(d.base_count), static_cast<unsigned long long>(d.base_mass),
      d.top_k_applied ? "at" : "off", d.top_k_threshold, d.top_p_applied ? "at" : "off", d.top_p_threshold,
      static_cast<long long>(d.kept_count), static_cast<unsigned long long>(d.kept_mass),
      static_cast<unsigned long long>(d.draw));
  const float scaled_max = sampling::scaled_logit(d.logit_max, p.temperature);
  for (int32_t id : {d.token, gpu_id}) {
    if (id < 0 || id >= vocab) {
      std::printf("    %s id %d is out of range\n", id == d.token ? "cpu" : "gpu", id);
      continue;
    }
    const float s = sampling::scaled_logit(row[id], p.temperature);
    const float w = sampling::relative_weight(s, scaled_max);
    std::printf("    %s id %d: logit %.9g scaled %.9g weight %.9g mass %llu\n", id == d.token ? "cpu" : "gpu", id,
                row[id], s, w, static_cast<unsigned long long>(sampling::fixed_weight(w)));
  }
}

// GPU vs CPU over one shape; returns (sampled rows, identical sampled rows).
std::pair<int64_t, int64_t> compare(int64_t rows, int64_t vocab, uint32_t seed, ThreadPool& pool) {
  std::mt19937 rng(seed);
  const std::vector<float> logits = random_logits(rows, vocab, rng);
  const std::vector<SamplingParams> params = random_params(rows, vocab, rng);
  const Outputs gpu = run_gpu(logits, rows, vocab, params, true);
  const Outputs cpu = run_cpu(logits, rows, vocab, params, pool);
  int64_t sampled = 0, same = 0, logprob_diff = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (params[r].temperature == 0.0f) {
      EXPECT_EQ(gpu.ids[r], cpu.ids[r]) << "greedy row " << r << " of " << rows << " x " << vocab;
      continue;
    }
    ++sampled;
    if (gpu.ids[r] == cpu.ids[r]) {
      ++same;
      uint32_t a, b;
      std::memcpy(&a, &gpu.logprobs[r], 4);
      std::memcpy(&b, &cpu.logprobs[r], 4);
      // An all-NaN row's logprob is NaN on both sides; the sign bit of a NaN carries nothing.
      const bool both_nan = std::isnan(gpu.logprobs[r]) && std::isnan(cpu.logprobs[r]);
      if (a != b && !both_nan) ++logprob_diff;
      if (!both_nan) EXPECT_NEAR(gpu.logprobs[r], cpu.logprobs[r], 1e-5f) << "logprob of row " << r;
    } else {
      std::printf("vocab %lld rows %lld row %lld: gpu %d cpu %d\n", static_cast<long long>(vocab),
                  static_cast<long long>(rows), static_cast<long long>(r), gpu.ids[r], cpu.ids[r]);
      print_mismatch(logits.data() + r * vocab, vocab, params[r], gpu.ids[r]);
    }
  }
  EXPECT_EQ(logprob_diff, 0) << "logprobs not bit-identical (vocab " << vocab << ", rows " << rows << ")";
  return {sampled, same};
}

TEST(CudaSampling, MatchesCpuReference) {
  FG_REQUIRE_GPU();
  ThreadPool pool(0);
  int64_t sampled = 0, same = 0;
  uint32_t seed = 100;
  for (int64_t vocab : {320, 32000, 128256}) {
    for (int64_t rows : {1, 7, 64, 300}) {
      const auto [s, m] = compare(rows, vocab, seed++, pool);
      sampled += s;
      same += m;
    }
  }
  const double rate = sampled ? static_cast<double>(same) / sampled : 1.0;
  std::printf("CudaSampling: %lld of %lld sampled rows identical to the CPU (%.5f%%)\n", static_cast<long long>(same),
              static_cast<long long>(sampled), 100.0 * rate);
  RecordProperty("sampled_rows", static_cast<int>(sampled));
  RecordProperty("identical_sampled_rows", static_cast<int>(same));
  EXPECT_GE(rate, 0.999);
}

TEST(CudaSampling, OddVocabulariesAndUnalignedRows) {
  FG_REQUIRE_GPU();
  ThreadPool pool(0);
  for (int64_t vocab : {1, 3, 7, 2049, 32001, 152064}) {
    const auto [s, m] = compare(vocab > 100000 ? 9 : 40, vocab, static_cast<uint32_t>(vocab), pool);
    EXPECT_EQ(s, m) << "vocab " << vocab;
  }
  // A row start that is not 16-byte aligned although vocab % 4 == 0: the scalar load path.
  constexpr int64_t kVocab = 4096, kRows = 5;
  std::mt19937 rng(3);
  std::vector<float> logits = random_logits(kRows, kVocab, rng);
  const std::vector<SamplingParams> params = random_params(kRows, kVocab, rng);
  DeviceBuffer storage = device_alloc(DType::kF32, {kRows * kVocab + 1});
  Tensor shifted(static_cast<float*>(storage.tensor.data) + 1, DType::kF32, {kRows, kVocab}, Device::kCuda);
  upload(shifted, logits);
  DeviceParams d_params(kRows);
  d_params.upload_from(params);
  DeviceBuffer ids = device_alloc(DType::kI32, {kRows});
  poison(ids.tensor);
  cuda::launch_sampling(shifted, d_params.tensors, ids.tensor, nullptr, 0, nullptr);
  EXPECT_EQ(download<int32_t>(ids.tensor), run_cpu(logits, kRows, kVocab, params, pool).ids);
}

TEST(CudaSampling, MaskedAndNanRows) {
  FG_REQUIRE_GPU();
  ThreadPool pool(2);
  constexpr int64_t kVocab = 5000;
  std::vector<float> logits(4 * kVocab, -kInf);                                          // row 0: all masked
  std::fill(logits.begin() + kVocab, logits.begin() + 2 * kVocab, std::nanf(""));        // row 1: all NaN
  logits[2 * kVocab + 4321] = 1.0f;                                                      // row 2: one finite token
  for (int64_t i = 0; i < kVocab; ++i) logits[3 * kVocab + i] = (i % 2) ? 0.0f : -kInf;  // row 3: odd ids only
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_p = 0.9f;
  p.seed = 5;
  const std::vector<SamplingParams> params(4, p);
  const Outputs gpu = run_gpu(logits, 4, kVocab, params, false);
  EXPECT_EQ(gpu.ids, run_cpu(logits, 4, kVocab, params, pool).ids);
  EXPECT_EQ(gpu.ids[0], 0);
  EXPECT_EQ(gpu.ids[1], 0);
  EXPECT_EQ(gpu.ids[2], 4321);
  EXPECT_EQ(gpu.ids[3] % 2, 1);
}

TEST(CudaSampling, ResultDoesNotDependOnRowPosition) {
  FG_REQUIRE_GPU();
  constexpr int64_t kVocab = 128256;
  std::mt19937 rng(77);
  const std::vector<float> pool_logits = random_logits(8, kVocab, rng);
  const std::vector<SamplingParams> pool_params = random_params(8, kVocab, rng);
  // Batch of 8 in order, then the same rows reversed inside a batch of 20 with other rows.
  const Outputs a = run_gpu(pool_logits, 8, kVocab, pool_params, true);
  std::vector<float> logits = random_logits(20, kVocab, rng);
  std::vector<SamplingParams> params = random_params(20, kVocab, rng);
  for (int i = 0; i < 8; ++i) {
    std::copy_n(pool_logits.begin() + i * kVocab, kVocab, logits.begin() + (19 - 2 * i) * kVocab);
    params[19 - 2 * i] = pool_params[i];
  }
  const Outputs b = run_gpu(logits, 20, kVocab, params, true);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(a.ids[i], b.ids[19 - 2 * i]) << "row " << i;
    EXPECT_EQ(a.logprobs[i], b.logprobs[19 - 2 * i]) << "row " << i;
  }
}

// A graph captured for 64 rows (the last 14 padded: neutral parameters, zero logits) replays with
// new inputs and matches an eager launch of the 50 real rows.
TEST(CudaSampling, GraphReplayWithPaddedRowsEqualsEager) {
  FG_REQUIRE_GPU();
  constexpr int64_t kVocab = 32000, kReal = 50, kPadded = 64;
  DeviceBuffer logits = device_alloc(DType::kF32, {kPadded, kVocab});
  DeviceParams params(kPadded);
  DeviceBuffer graph_ids = device_alloc(DType::kI32, {kPadded}), eager_ids = device_alloc(DType::kI32, {kReal});
  cudaStream_t stream;
  FG_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  FG_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  cuda::launch_sampling(logits.tensor, params.tensors, graph_ids.tensor, nullptr, 0, stream);
  FG_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  FG_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));

  std::mt19937 rng(12);
  for (int replay = 0; replay < 3; ++replay) {
    std::vector<float> host_logits = random_logits(kPadded, kVocab, rng);
    std::fill(host_logits.begin() + kReal * kVocab, host_logits.end(), 0.0f);
    upload(logits.tensor, host_logits);
    params.upload_from(random_params(kReal, kVocab, rng));  // rows 50..63 neutral
    poison(graph_ids.tensor);
    poison(eager_ids.tensor);
    FG_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    cuda::launch_sampling(logits.tensor.rows(0, kReal), params.tensors, eager_ids.tensor, nullptr, 0, stream);
    FG_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<int32_t> g = download<int32_t>(graph_ids.tensor);
    const std::vector<int32_t> e = download<int32_t>(eager_ids.tensor);
    EXPECT_EQ(std::vector<int32_t>(g.begin(), g.begin() + kReal), e) << "replay " << replay;
    for (int64_t r = kReal; r < kPadded; ++r) EXPECT_EQ(g[r], 0) << "padded row " << r;  // argmax of zeros
  }
  FG_CUDA_CHECK(cudaGraphExecDestroy(exec));
  FG_CUDA_CHECK(cudaGraphDestroy(graph));
  FG_CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace fg
