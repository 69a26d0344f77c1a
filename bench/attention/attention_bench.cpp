// bench/attention/attention_bench.cpp — `fullgraph bench attention` (see the header):
// builds paged steps on the device, captures a CUDA graph of several run() calls per case (the way
// the engine runs them), times graph replays with CUDA events and reports the median.
//
// Measures, Llama-3.1-8B attention shape (32 q heads, 8 KV heads, hd 128, block 16, bf16):
//   decode:  GB/s = KV bytes read / time, KV bytes = batch * context * 8 heads * 128 * 2 B * 2 (K, V);
//            batch 1 .. 64 x context 512 .. 32k, each backend (`auto` with its default buckets,
//            powers of two, shows which of the other two it picks). Each run of a graph reads a
//            different set of blocks (shuffled) so repeated runs do not measure the L2 cache.
//   prefill: TFLOP/s = 2 * batch * 32 heads * S^2 * 128 / time (QK^T and PV, 2 flops per MAC, half
//            of the S x S scores under the causal mask), `flash` only (split_kv serves decode),
//            S = 512 .. 8k, batch = 16384 / S (16k tokens: 8192 work tiles, many waves on 132 SMs).
#include "bench/attention/attention_bench.h"

#include <cuda_bf16.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <vector>

#include "attention/cuda/attention_backend.h"
#include "bench/common/cuda_timing.h"
#include "bench/common/device_buffer.h"
#include "bench/common/random_fill.h"
#include "core/cuda/cuda_check.h"
#include "core/error.h"

namespace fg::bench {

namespace {

constexpr int kHeads = 32, kKvHeads = 8, kHeadDim = 128, kBlock = 16;
constexpr int64_t kWidth = int64_t{kHeads} * kHeadDim;
constexpr int64_t kSlotBytes = int64_t{kKvHeads} * kHeadDim * 2;  // one position of K (or V), all heads
constexpr double kRotateBytes = 256.0 * 1024 * 1024;                // > 4x the L2 of an H100/H200

Tensor cuda_tensor(void* p, DType dtype, std::initializer_list<int64_t> dims) {
  return Tensor(p, dtype, dims, Device::kCuda);
}

struct Result {
  std::string backend, kind;
  int batch = 0, length = 0;  // context (decode) or sequence length (prefill)
  double us = 0, gbps = 0, tflops = 0;
};

// The KV cache shared by every case: blocks handed out in a shuffled order.
struct Cache {
  explicit Cache(int64_t blocks) : num_blocks(blocks), k(elements()), v(elements()) {}
  size_t elements() const { return static_cast<size_t>(num_blocks) * kBlock * kKvHeads * kHeadDim; }
  KvCacheLayer layer() const {
    return {cuda_tensor(k.get(), DType::kBF16, {num_blocks, kBlock, kKvHeads, kHeadDim}),
            cuda_tensor(v.get(), DType::kBF16, {num_blocks, kBlock, kKvHeads, kHeadDim})};
  }

  int64_t num_blocks;
  DeviceArray<__nv_bfloat16> k, v;  // [num_blocks, kBlock, kKvHeads, kHeadDim] each
  std::vector<int32_t> order;        // block ids 1.. in shuffled order (block 0 is the null block)
};

// A step of `batch` requests, each owning `query_len` tokens and a context of `context`; `sets`
// block tables over disjoint shuffled blocks; a graph of `runs` run() calls cycling over them.
double time_step(AttentionBackend& backend, const Cache& cache, int batch, int query_len, int context, int sets,
                 int runs, int reps, cudaStream_t stream) {
  const int64_t tokens = int64_t{batch} * query_len;
  const int blocks_per_req = (context + kBlock - 1) / kBlock;
  const int64_t blocks_per_set = int64_t{batch} * blocks_per_req;
  FG_CHECK(int64_t{sets} * blocks_per_set <= static_cast<int64_t>(cache.order.size()),
           "attention bench: {} block sets of {} blocks exceed the cache", sets, blocks_per_set);
  std::vector<int32_t> qsl(batch + 1), seq_lens(batch, context);
  for (int r = 0; r <= batch; ++r) qsl[r] = r * query_len;
  std::vector<int32_t> tables(cache.order.begin(), cache.order.begin() + sets * blocks_per_set);
  const DeviceArray<int32_t> d_qsl = device_copy(qsl), d_seq = device_copy(seq_lens), d_tables = device_copy(tables);
  const DeviceArray<__nv_bfloat16> q(tokens * kWidth), out(tokens * kWidth);
  launch_fill_random_bf16(q.get(), tokens * kWidth, 17, 0.0f, 2.0f, stream);

  const Tensor q_t = cuda_tensor(q.get(), DType::kBF16, {tokens, kWidth});
  const Tensor out_t = cuda_tensor(out.get(), DType::kBF16, {tokens, kWidth});
  const KvCacheLayer layer = cache.layer();
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  FG_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < runs; ++i) {
    int32_t* table = d_tables.get() + (i % sets) * blocks_per_set;
    const AttentionMetadata meta{cuda_tensor(d_qsl.get(), DType::kI32, {batch + 1}),
                                 cuda_tensor(d_seq.get(), DType::kI32, {batch}),
                                 cuda_tensor(table, DType::kI32, {batch, blocks_per_req}), query_len};
    backend.run(q_t, layer, meta, scale, out_t, stream);
  }
  FG_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  FG_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  const double us = median_graph_launch_us(exec, stream, reps) / runs;  // per run() call
  FG_CUDA_CHECK(cudaGraphExecDestroy(exec));
  FG_CUDA_CHECK(cudaGraphDestroy(graph));
  return us;
}

AttentionLimits limits(int64_t max_tokens, int64_t max_reqs, int64_t max_context) {
  AttentionLimits l;
  l.max_tokens = max_tokens;
  l.max_reqs = max_reqs;
  l.max_context = max_context;
  l.num_heads = kHeads;
  l.num_kv_heads = kKvHeads;
  l.head_dim = kHeadDim;
  l.block_size = kBlock;
  return l;
}

void print_row(const Result& r) {
  fmt::print("{:<9} {:<8} {:>6} {:>8} {:>11.2f} {:>9.1f} {:>9.1f}\n", r.backend, r.kind, r.batch, r.length, r.us,
             r.gbps, r.tflops);
}

}  // namespace

int run_attention_benchmarks(const std::string& json_out, AttentionBenchKinds kinds) {
  cudaDeviceProp prop{};
  FG_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const std::vector<int> batches = {1, 2, 4, 8, 16, 32, 64};
  const std::vector<int> contexts = {512, 1024, 4096, 8192, 16384, 32768};
  const std::vector<int> prefill_lens = {512, 1024, 2048, 4096, 8192};
  constexpr int kPrefillTokens = 16384;

  cudaStream_t stream;
  FG_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Cache cache(1 + int64_t{64} * (32768 / kBlock));  // the largest decode case: 8.6 GB of K and V
  launch_fill_random_bf16(cache.k.get(), static_cast<int64_t>(cache.elements()), 1, 0.0f, 1.0f, stream);
  launch_fill_random_bf16(cache.v.get(), static_cast<int64_t>(cache.elements()), 2, 0.0f, 1.0f, stream);
  cache.order.resize(cache.num_blocks - 1);
  std::iota(cache.order.begin(), cache.order.end(), 1);
  std::mt19937 rng(1234);
  std::shuffle(cache.order.begin(), cache.order.end(), rng);

  nlohmann::json report;
  report["device"] = prop.name;
  report["shape"] = {{"num_heads", kHeads}, {"num_kv_heads", kKvHeads}, {"head_dim", kHeadDim}, {"block_size", kBlock}};
  report["formulas"] = {{"decode_gbps", "batch * context * num_kv_heads * head_dim * 2 B * 2 (K and V) / time"},
                        {"prefill_tflops", "2 * batch * num_heads * S^2 * head_dim / time (causal half of 4 S^2 D H)"},
                        {"time", "median over graph replays of several run() calls each, divided by the calls"}};
  std::vector<Result> results;
  fmt::print("attention benchmark on {} ({} SMs): 32 q heads, 8 KV heads, hd 128, block 16, bf16\n", prop.name,
             prop.multiProcessorCount);
  fmt::print("{:<9} {:<8} {:>6} {:>8} {:>11} {:>9} {:>9}\n", "backend", "kind", "batch", "len", "us/run", "GB/s",
             "TFLOP/s");

  for (const std::string& name : kinds.decode_backends) {
    if (!kinds.decode) break;
    auto backend = make_attention_backend(name, limits(64, 64, 32768));
    report["describe"][name] = backend->describe();
    for (int batch : batches)
      for (int context : contexts) {
        const double kv_bytes = double(batch) * context * kSlotBytes * 2;
        const int64_t blocks_per_set = int64_t{batch} * (context / kBlock);
        const int max_sets = static_cast<int>(static_cast<int64_t>(cache.order.size()) / blocks_per_set);
        const int sets = std::max(1, std::min(max_sets, static_cast<int>(std::ceil(kRotateBytes / kv_bytes))));
        const int runs = std::clamp(sets, 8, 64);
        Result r{name, "decode", batch, context};
        r.us = time_step(*backend, cache, batch, 1, context, sets, runs, 30, stream);
        r.gbps = kv_bytes / (r.us * 1e-6) / 1e9;
        print_row(r);
        results.push_back(r);
      }
  }
  if (kinds.prefill) {
    auto flash = make_attention_backend("flash", limits(kPrefillTokens, 64, 8192));
    for (int seq : prefill_lens) {
      const int batch = std::max(1, kPrefillTokens / seq);
      Result r{"flash", "prefill", batch, seq};
      r.us = time_step(*flash, cache, batch, seq, seq, 1, 3, 10, stream);
      r.tflops = 2.0 * batch * kHeads * double(seq) * seq * kHeadDim / (r.us * 1e-6) / 1e12;
      print_row(r);
      results.push_back(r);
    }
  }
  FG_CUDA_CHECK(cudaStreamSynchronize(stream));
  FG_CUDA_CHECK(cudaStreamDestroy(stream));

  for (const Result& r : results)
    report["results"].push_back({{"backend", r.backend}, {"kind", r.kind}, {"batch", r.batch}, {"length", r.length},
                                 {"us", r.us}, {"gbps", r.gbps}, {"tflops", r.tflops}});
  if (!json_out.empty()) {
    std::ofstream f(json_out);
    FG_CHECK(f.good(), "attention bench: cannot write {}", json_out);
    f << report.dump(2) << "\n";
    fmt::print("wrote {}\n", json_out);
  }
  return 0;
}

}  // namespace fg::bench
