// backend/cuda/phase_boundaries.cpp — the phase-boundary probe's table (see phase_boundaries.h).
#include "backend/cuda/phase_boundaries.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "core/cuda/cuda_check.h"
#include "backend/cuda/fill_kernels.h"
#include "backend/cuda/graph_timing.h"
#include "backend/cuda/phase_read_kernels.h"
#include "backend/cuda/read_kernels.h"

namespace fg::cuda {

namespace {

// A model shape's layer as the decode step reads it at batch 1: q/k/v, the KV cache at a context
// of 512 (attention), o_proj, gate/up, down. The split-K layouts merge attention with o_proj and
// gate/up with down, as a kernel would whose blocks multiply their part of a head's output, or of
// the SiLU product, by the matching columns of the next weight at once (no boundary between the
// two), and then add their partial sums of the hidden vector into one (`reduce`: its width per
// phase, 64-bit integer adds, PhaseReads::reduce_width; "no sums": the same phases without them).
struct LayerReads {
  const char* model;
  int layers;  // as many as the table reads (each its own bytes, so that L2 holds none ahead)
  std::vector<int64_t> bytes;
  std::vector<int> reduce;  // [phase] or empty
  bool split_k = false;     // the table runs only the preload rows
};

std::vector<LayerReads> layer_reads() {
  constexpr int64_t kContext = 512;
  struct Shape {
    const char* name;
    int layers;
    int64_t hidden, q, kv, intermediate;
  };
  const Shape one_b{"Llama-3.2-1B", 16, 2048, 2048, 512, 8192}, eight_b{"Llama-3.1-8B", 8, 4096, 4096, 1024, 14336};
  auto layer = [](const Shape& m) {
    return std::vector<int64_t>{2 * (m.q + 2 * m.kv) * m.hidden, 2 * 2 * m.kv * kContext, 2 * m.q * m.hidden,
                                2 * 2 * m.intermediate * m.hidden, 2 * m.hidden * m.intermediate};
  };
  auto split_k = [&](const Shape& m, const char* name, bool sums) {
    const std::vector<int64_t> b = layer(m);
    const int width = sums ? static_cast<int>(m.hidden) : 0;
    return LayerReads{name, m.layers, {b[0], b[1] + b[2], b[3] + b[4]}, {0, width, width}, true};
  };
  // Phases of 16 bytes: what a boundary costs with (nearly) nothing to read.
  return {{one_b.name, one_b.layers, layer(one_b), {}, false},
          {eight_b.name, eight_b.layers, layer(eight_b), {}, false},
          {"16 B phases", 16, {16, 16, 16, 16, 16}, {}, false},
          split_k(one_b, "1B split-K, no sums", false),
          split_k(one_b, "1B split-K", true),
          split_k(eight_b, "8B split-K, no sums", false),
          split_k(eight_b, "8B split-K", true)};
}

struct ProbeRow {
  std::string name;
  bool persistent;
  PhaseProbeConfig config;
};

std::vector<ProbeRow> probe_rows() {
  // 4 x 256 threads per SM: another launch's blocks fit beside them. 1 x 1024 threads with 200 KB
  // of shared memory: they fill the SM, as the streamed matmuls' blocks do.
  const PhaseProbeConfig small{0, false, 4, 256, 0}, filling{0, false, 1, 1024, 200 * 1024};
  auto preloading = [](PhaseProbeConfig c) {
    c.preload = true;
    return c;
  };
  // The first bytes of each block's share copied to shared memory before the wait (cp.async):
  // deeper than registers hold (192 KB per SM: 25 MB over the chip, more than the 1B's q/k/v).
  auto stashing = [&](PhaseProbeConfig c, int64_t bytes) {
    c = preloading(c);
    c.stash_bytes = bytes;
    c.shared_bytes = std::max(c.shared_bytes, static_cast<size_t>(bytes));
    return c;
  };
  // Launches whose blocks wait for the launch before's blocks to arrive at a counter, as a grid
  // barrier's do, rather than for its grid to complete.
  auto flagged = [&](PhaseProbeConfig c, bool grid_wait_at_exit = true) {
    c.flag_waits = true;
    c.grid_wait_at_exit = grid_wait_at_exit;
    return c;
  };
  PhaseProbeConfig l2_prefetch = small;
  l2_prefetch.prefetch_bytes = 32 << 10;
  return {{"launches, 4 x 256 / SM", false, small},
          {"launches, 4 x 256 / SM, preload", false, preloading(small)},
          {"launches, filling the SM", false, filling},
          {"launches, filling the SM, preload", false, preloading(filling)},
          {"persistent, 4 x 256 / SM", true, small},
          {"persistent, 4 x 256 / SM, preload", true, preloading(small)},
          {"persistent, 1 x 1024 / SM", true, filling},
          {"persistent, 1 x 1024 / SM, preload", true, preloading(filling)},
          {"persistent, 4 x 256 / SM, L2 prefetch 32 KB", true, l2_prefetch},
          {"launches, filling the SM, preload + stash 192 KB", false, stashing(filling, 192 << 10)},
          {"persistent, 4 x 256 / SM, preload + stash 48 KB", true, stashing(small, 48 << 10)},
          {"persistent, 1 x 1024 / SM, preload + stash 192 KB", true, stashing(filling, 192 << 10)},
          {"launches, flag waits, 4 x 256 / SM", false, flagged(small)},
          {"launches, flag waits, 4 x 256 / SM, preload", false, flagged(preloading(small))},
          {"launches, flag waits, filling the SM", false, flagged(filling)},
          {"launches, flag waits, filling the SM, preload", false, flagged(preloading(filling))},
          {"launches, flag waits only, 4 x 256 / SM, preload", false, flagged(preloading(small), false)},
          {"launches, flag waits only, filling the SM, preload", false, flagged(preloading(filling), false)}};
}

// down_proj read by column chunks (what a split-K MLP block reads of it) against the same bytes
// read whole, µs per read: copies enough that L2 holds none of the next read's.
nlohmann::json bench_column_chunks(CudaBackend& backend, unsigned* sink) {
  struct Matrix {
    const char* name;
    int64_t rows, cols;  // bf16
  };
  constexpr int kLaunches = 8;
  nlohmann::json result = nlohmann::json::array();
  fmt::print("\nColumn chunks: down_proj [hidden, intermediate] read by chunks of columns, one block per chunk, "
             "against one read of the same bytes;\n{} reads per graph replay over copies (no L2 hits), us per read\n",
             kLaunches);
  fmt::print("{:<16} {:>11} {:>8} | {:>9} {:>8} | {:>10}\n", "matrix", "chunk bytes", "threads", "us", "GB/s",
             "vs whole");
  for (const Matrix& m : {Matrix{"1B down_proj", 2048, 8192}, Matrix{"8B down_proj", 4096, 14336}}) {
    const int64_t bytes = 2 * m.rows * m.cols;
    const int copies = static_cast<int>(std::max<int64_t>(2, (int64_t{256} << 20) / bytes + 1));
    std::vector<Allocation> weights;
    for (int c = 0; c < copies; ++c) {
      weights.push_back(backend.allocate(DType::kBF16, {m.rows, m.cols}));
      launch_fill_random_bf16(static_cast<__nv_bfloat16*>(weights.back().tensor.data), m.rows * m.cols, 11 + c,
                              0.0f, 1.0f, backend.stream());
    }
    const double whole_us = probe_graph_us(backend, [&] {
      for (int i = 0; i < kLaunches; ++i)
        launch_read_only(weights[i % copies].tensor.data, bytes, sink, backend.stream());
    }) / kLaunches;
    auto row = [&](int chunk, int threads, double us) {
      const double gbps = static_cast<double>(bytes) / (us * 1e-6) / 1e9;
      fmt::print("{:<16} {:>11} {:>8} | {:>9.2f} {:>8.0f} | {:>9.2f}x\n", m.name,
                 chunk == 0 ? std::string("whole") : std::to_string(chunk), threads, us, gbps, whole_us / us);
      result.push_back({{"matrix", m.name}, {"chunk_bytes", chunk}, {"threads", threads}, {"us", us}, {"gbps", gbps}});
    };
    row(0, 256, whole_us);
    for (const int chunk : {32, 64, 128, 256}) {
      for (const int threads : {256, 1024}) {
        const double us = probe_graph_us(backend, [&] {
          for (int i = 0; i < kLaunches; ++i)
            launch_column_chunk_reads(weights[i % copies].tensor.data, m.rows, 2 * m.cols, chunk, threads, sink,
                                      backend.stream());
        }) / kLaunches;
        row(chunk, threads, us);
      }
    }
  }
  return result;
}

}  // namespace

nlohmann::json probe_table_row(const ProbeTable& table, const std::string& model, const char* name_key,
                               const std::string& name, double us) {
  const double gbps = static_cast<double>(table.bytes) / (us * 1e-6) / 1e9;
  const double per_boundary = (us - table.one_read_us) / table.phases;
  fmt::print("{:<{}} {:<{}} | {:>9.2f} {:>8.0f} {:>5.0f}% | {:>12.2f}\n", model, table.model_width, name,
             table.name_width, us / table.layers, gbps, 100.0 * gbps / table.copy_gbps, per_boundary);
  return {{"model", model},
          {name_key, name},
          {"us_per_layer", us / table.layers},
          {"gbps", gbps},
          {"us_per_boundary", per_boundary}};
}

double probe_graph_us(CudaBackend& backend, const std::function<void()>& work) {
  work();  // eager first: a launch error shows here, outside capture
  backend.synchronize();
  backend.begin_capture();
  work();
  std::unique_ptr<Graph> graph = backend.end_capture();
  return median_us(backend.stream(), kProbeReps, 2, [&] { graph->replay(); });
}

nlohmann::json bench_phase_boundaries(CudaBackend& backend, double copy_gbps) {
  nlohmann::json result = nlohmann::json::array();
  Allocation counters = backend.allocate(DType::kI32, {2});  // [barrier, sink]
  auto* barrier = static_cast<unsigned*>(counters.tensor.data);
  unsigned* sink = barrier + 1;
  fmt::print("\nPhase boundaries: a decode layer's reads in order (q/k/v, KV cache at 512, o_proj, gate/up, down), "
             "read and nothing else,\nas one launch per phase (PDL) or one resident kernel with a grid barrier "
             "per phase; graph replay, median of {}.\nper boundary: the time beyond one read of all the bytes, "
             "over the phases\n",
             kProbeReps);
  fmt::print("{:<19} {:<50} | {:>9} {:>8} {:>6} | {:>12}\n", "model", "reads", "us/layer", "GB/s", "%copy",
             "us/boundary");
  for (const LayerReads& shape : layer_reads()) {
    std::vector<int64_t> begin{0};
    for (int l = 0; l < shape.layers; ++l)
      for (int64_t b : shape.bytes) begin.push_back(begin.back() + b);
    const int phases = static_cast<int>(begin.size()) - 1;
    const int64_t total = begin.back();
    Allocation weights = backend.allocate(DType::kBF16, {total / 2});
    launch_fill_random_bf16(static_cast<__nv_bfloat16*>(weights.tensor.data), total / 2, 7, 0.0f, 1.0f,
                            backend.stream());
    Allocation offsets = backend.allocate(DType::kI64, {phases + 1});
    FG_CUDA_CHECK(cudaMemcpyAsync(offsets.tensor.data, begin.data(), begin.size() * sizeof(int64_t),
                                  cudaMemcpyHostToDevice, backend.stream()));
    PhaseReads reads{weights.tensor.data, static_cast<const int64_t*>(offsets.tensor.data), phases};
    Allocation widths, sums;
    if (!shape.reduce.empty()) {
      std::vector<int> width;
      for (int l = 0; l < shape.layers; ++l) width.insert(width.end(), shape.reduce.begin(), shape.reduce.end());
      widths = backend.allocate(DType::kI32, {phases});
      FG_CUDA_CHECK(cudaMemcpyAsync(widths.tensor.data, width.data(), width.size() * sizeof(int),
                                    cudaMemcpyHostToDevice, backend.stream()));
      sums = backend.allocate(DType::kI64, {*std::max_element(width.begin(), width.end()) + 1});
      reads.reduce_width = static_cast<const int*>(widths.tensor.data);
      reads.sums = static_cast<unsigned long long*>(sums.tensor.data);
    }

    const double one_read_us =
        probe_graph_us(backend, [&] { launch_read_only(reads.base, total, sink, backend.stream()); });
    const ProbeTable table{total, shape.layers, phases, one_read_us, copy_gbps, 19, 50};
    auto print_row = [&](const std::string& name, double us) {
      result.push_back(probe_table_row(table, shape.model, "reads", name, us));
    };
    print_row("one read of all the bytes (one launch)", one_read_us);
    for (const ProbeRow& row : probe_rows()) {
      if (shape.split_k && (!row.config.preload || row.config.stash_bytes > 0)) continue;
      const double us = probe_graph_us(backend, [&] {
        if (row.persistent) launch_phase_reads_persistent(reads, row.config, barrier, sink, backend.stream());
        else launch_phase_reads_chained(reads, row.config, barrier, sink, backend.stream());
      });
      print_row(row.name, us);
    }
  }
  return {{"phases", result}, {"column_chunks", bench_column_chunks(backend, sink)}};
}

}  // namespace fg::cuda
