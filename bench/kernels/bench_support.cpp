// bench/kernels/bench_support.cpp — see bench_support.h.
#include "bench/kernels/bench_support.h"

#include <algorithm>
#include <cmath>

#include "bench/common/cuda_timing.h"
#include "bench/common/random_fill.h"
#include "core/cuda/cuda_check.h"

namespace fg::bench {

double time_per_launch_us(CudaBackend& backend, int launches, const std::function<void(int)>& launch) {
  for (int i = 0; i < launches; ++i) launch(i);  // eager first: plans (cuBLASLt algorithms) outside capture
  backend.synchronize();
  backend.begin_capture();
  for (int i = 0; i < launches; ++i) launch(i);
  std::unique_ptr<Graph> graph = backend.end_capture();
  return median_us(backend.stream(), kReps, 3, [&] { graph->replay(); }) / launches;
}

double copy_bandwidth_gbps(CudaBackend& backend) {
  const int64_t bytes = int64_t{1} << 30;
  Allocation src = backend.allocate(DType::kI32, {bytes / 4}), dst = backend.allocate(DType::kI32, {bytes / 4});
  const double us = median_us(backend.stream(), 10, 2, [&] {
    FG_CUDA_CHECK(cudaMemcpyAsync(dst.tensor.data, src.tensor.data, bytes, cudaMemcpyDeviceToDevice, backend.stream()));
  });
  return 2.0 * static_cast<double>(bytes) / (us * 1e-6) / 1e9;  // read + written
}

Tensor RandomTensors::bf16(std::initializer_list<int64_t> dims, float center, float scale) {
  Allocation a = backend_.allocate(DType::kBF16, dims);
  launch_fill_random_bf16(static_cast<__nv_bfloat16*>(a.tensor.data), a.tensor.numel(), next_seed_++, center, scale,
                          backend_.stream());
  memory_.push_back(a.memory);
  return a.tensor;
}

const std::vector<ModelShape>& model_shapes() {
  static const std::vector<ModelShape> shapes = {
      {"Llama-3.2-1B", 16, 2048, 8192, 32, 8, 64, 128256, true},
      {"Llama-3.1-8B", 32, 4096, 14336, 32, 8, 128, 128256, false},
  };
  return shapes;
}

std::vector<LinearShape> decode_linears(const ModelShape& m) {
  const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  // qkv_proj and gate_up_proj: the spans the model runs as one matmul (Backend::linear_group).
  return {{"q_proj", q, m.hidden},
          {"k/v_proj", kv, m.hidden},
          {"qkv_proj", q + 2 * kv, m.hidden},
          {"o_proj", m.hidden, q},
          {"gate/up_proj", m.intermediate, m.hidden},
          {"gate_up_proj", 2 * m.intermediate, m.hidden},
          {"down_proj", m.hidden, m.intermediate},
          {"lm_head", m.vocab, m.hidden}};
}

std::vector<Tensor> rotated_weights(RandomTensors& random, const LinearShape& shape) {
  const size_t weight_bytes = static_cast<size_t>(shape.out_features * shape.in) * 2;
  const int copies = static_cast<int>(std::max<size_t>(2, (kRotateBytes + weight_bytes - 1) / weight_bytes));
  std::vector<Tensor> weights;
  for (int c = 0; c < copies; ++c)
    weights.push_back(
        random.bf16({shape.out_features, shape.in}, 0.0f, 1.0f / std::sqrt(static_cast<float>(shape.in))));
  return weights;
}

}  // namespace fg::bench
