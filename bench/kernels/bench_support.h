// bench/kernels/bench_support.h — what the tables of `bench kernels` share: the method's constants,
// the time of one launch in a graph of many, random device tensors, the model shapes and their
// decode matmuls, and weights rotated through more bytes than L2 holds.
//
// Method (.library METHOD.md): warm up first; time many repetitions and report the median; read
// weights from a rotation of buffers whose total is several times the 50 MB L2, so that HBM, not
// the cache, serves them; never time on zeros (weights and KV caches get random values).
// Matmuls are timed as replays of a CUDA graph of kBatch launches, so launch gaps stay out of a
// kernel's number.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"

namespace fg::bench {

inline constexpr int kBatch = 20;                  // launches per timed graph replay, at least
inline constexpr int kReps = 30;                   // timed replays (median)
inline constexpr size_t kRotateBytes = 256u << 20;  // weight bytes cycled through: 5x the L2

// Microseconds per launch of `launch(i)`, i = 0 .. launches-1 captured as one graph (so a rotation
// over `launches` weight buffers keeps its whole span between two uses of a buffer).
double time_per_launch_us(CudaBackend& backend, int launches, const std::function<void(int)>& launch);

// The device-to-device copy bandwidth in GB/s (bytes read + written) of a 1 GB copy: the ceiling
// the tables' percentages are of.
double copy_bandwidth_gbps(CudaBackend& backend);

// Device tensors of random bf16 values, each from its own seed; owns their memory.
class RandomTensors {
 public:
  explicit RandomTensors(CudaBackend& backend) : backend_(backend) {}

  // Values uniform in [center - scale, center + scale).
  Tensor bf16(std::initializer_list<int64_t> dims, float center, float scale);
  const std::vector<std::shared_ptr<void>>& memory() const { return memory_; }

 private:
  CudaBackend& backend_;
  uint64_t next_seed_ = 1;
  std::vector<std::shared_ptr<void>> memory_;
};

struct ModelShape {
  std::string name;
  int64_t layers, hidden, intermediate, heads, kv_heads, head_dim, vocab;
  bool tied;
};

// Llama-3.2-1B and Llama-3.1-8B.
const std::vector<ModelShape>& model_shapes();

struct LinearShape {
  std::string name;
  int64_t out_features, in;
};

// A model's decode matmuls, with the spans it runs as one matmul (qkv_proj, gate_up_proj).
std::vector<LinearShape> decode_linears(const ModelShape& m);

// Copies of one random weight shape, enough of them that a rotation spans several L2s.
std::vector<Tensor> rotated_weights(RandomTensors& random, const LinearShape& shape);

}  // namespace fg::bench
