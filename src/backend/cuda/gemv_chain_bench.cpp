// backend/cuda/gemv_chain_bench.cpp — the GEMV chain's table (see gemv_chain_bench.h).
#include "backend/cuda/gemv_chain_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "core/cuda/cuda_check.h"
#include "backend/cuda/fill_kernels.h"
#include "backend/cuda/gemv_chain_kernels.h"
#include "backend/cuda/phase_boundaries.h"
#include "backend/cuda/phase_read_kernels.h"
#include "backend/cuda/read_kernels.h"

namespace fg::cuda {

namespace {

struct LayerShape {
  const char* name;
  int layers;  // each its own weights, so that L2 holds none of the next phase's
  int hidden, qkv, intermediate;
};

// Where a persistent chain's time goes, per phase of the layer (the median over layers), from one
// run with the timeline: span, the last block's end to the next phase's last block's end; barrier,
// the last block's end to each block's release from the wait (median over blocks); input, the
// release to the input in shared memory; rows, the input to the block's end (median and slowest).
struct PhaseTimes {
  double span, barrier, input, rows_median, rows_max;
};
using PhaseTimeline = std::vector<PhaseTimes>;  // [phase of the layer]

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

PhaseTimeline timeline_of(CudaBackend& backend, const GemvPhase* on_device, const std::vector<GemvPhase>& phases,
                          bool dynamic, unsigned* counters) {
  constexpr int kPhasesPerLayer = 4;
  const GemvChainConfig base;
  const int blocks = gemv_chain_blocks(base, backend.sm_count()), count = static_cast<int>(phases.size());
  Allocation events = backend.allocate(DType::kI64, {int64_t{count} * blocks * kGemvEvents});
  GemvChainConfig config = base;
  config.dynamic = dynamic;
  config.timeline = static_cast<unsigned long long*>(events.tensor.data);
  launch_gemv_chain_persistent(on_device, phases.data(), count, config, counters, backend.stream());
  std::vector<int64_t> t(static_cast<size_t>(count) * blocks * kGemvEvents);
  backend.copy_to_host(t.data(), events.tensor);
  auto at = [&](int p, int b, int e) {
    return static_cast<double>(t[(static_cast<size_t>(p) * blocks + b) * kGemvEvents + e]);
  };
  std::vector<double> last_done(static_cast<size_t>(count));
  for (int p = 0; p < count; ++p) {
    last_done[p] = at(p, 0, kGemvDone);
    for (int b = 1; b < blocks; ++b) last_done[p] = std::max(last_done[p], at(p, b, kGemvDone));
  }
  PhaseTimeline result;
  for (int k = 0; k < kPhasesPerLayer; ++k) {
    std::vector<double> span, barrier_us, input, rows_median, rows_max;
    for (int p = k; p < count; p += kPhasesPerLayer) {
      if (p == 0) continue;  // the first phase waits for the launch, not a barrier
      std::vector<double> released, loaded, rows;
      for (int b = 0; b < blocks; ++b) {
        released.push_back((at(p, b, kGemvWaited) - last_done[p - 1]) * 1e-3);
        loaded.push_back((at(p, b, kGemvInputReady) - at(p, b, kGemvWaited)) * 1e-3);
        rows.push_back((at(p, b, kGemvDone) - at(p, b, kGemvInputReady)) * 1e-3);
      }
      span.push_back((last_done[p] - last_done[p - 1]) * 1e-3);
      barrier_us.push_back(median_of(released));
      input.push_back(median_of(loaded));
      rows_median.push_back(median_of(rows));
      rows_max.push_back(*std::max_element(rows.begin(), rows.end()));
    }
    result.push_back(
        {median_of(span), median_of(barrier_us), median_of(input), median_of(rows_median), median_of(rows_max)});
  }
  return result;
}

void print_timelines(const std::vector<std::pair<std::string, PhaseTimeline>>& timelines) {
  static const char* kNames[] = {"q/k/v", "o_proj + residual", "gate/up + SiLU", "down + residual"};
  fmt::print(
      "\nWhere the persistent chain's time goes (4 x 256 / SM, rows fixed or handed out; one run, the "
      "GPU's global timer; us, median over layers):\n");
  fmt::print("{:<26} {:<20} | {:>7} {:>8} {:>7} {:>12} {:>9}\n", "model, rows", "phase", "span", "barrier", "input",
             "rows median", "rows max");
  for (const auto& [model, phases] : timelines)
    for (size_t k = 0; k < phases.size(); ++k)
      fmt::print("{:<26} {:<20} | {:>7.2f} {:>8.2f} {:>7.2f} {:>12.2f} {:>9.2f}\n", model, kNames[k], phases[k].span,
                 phases[k].barrier, phases[k].input, phases[k].rows_median, phases[k].rows_max);
}

}  // namespace

nlohmann::json bench_gemv_chain(CudaBackend& backend, double copy_gbps) {
  nlohmann::json result = nlohmann::json::array();
  Allocation counters = backend.allocate(DType::kI32, {2});  // [barrier, sink]
  auto* barrier = static_cast<unsigned*>(counters.tensor.data);
  unsigned* sink = barrier + 1;
  fmt::print(
      "\nGEMV chain: a decode layer's matmuls at one token (q/k/v; o_proj + residual; gate/up + SiLU; "
      "down + residual),\nas one PDL launch per phase or one resident kernel with a grid barrier per "
      "phase, beside reads of the same bytes;\ngraph replay, median of {}. per boundary: the time beyond "
      "one read of all the bytes, over the phases\n",
      kProbeReps);
  fmt::print("{:<14} {:<48} | {:>9} {:>8} {:>6} | {:>12}\n", "model", "run", "us/layer", "GB/s", "%copy",
             "us/boundary");
  std::vector<std::pair<std::string, PhaseTimeline>> timelines;
  for (const LayerShape& m :
       {LayerShape{"Llama-3.2-1B", 16, 2048, 3072, 8192}, LayerShape{"Llama-3.1-8B", 8, 4096, 6144, 14336}}) {
    const int64_t h = m.hidden, qkv = m.qkv, inter = m.intermediate;
    const std::vector<int64_t> elements{qkv * h, h * h, 2 * inter * h, h * inter};  // per layer, in order
    int64_t per_layer = 0;
    for (int64_t e : elements) per_layer += e;
    const int64_t total = per_layer * m.layers;
    Allocation weights = backend.allocate(DType::kBF16, {total});
    auto* w = static_cast<__nv_bfloat16*>(weights.tensor.data);
    launch_fill_random_bf16(w, total, 5, 0.0f, 0.01f, backend.stream());
    // The vectors: the residual stream x, q/k/v, and the SiLU product.
    Allocation vectors = backend.allocate(DType::kBF16, {h + qkv + inter});
    auto* x = static_cast<__nv_bfloat16*>(vectors.tensor.data);
    __nv_bfloat16* qkv_out = x + h;
    __nv_bfloat16* act = qkv_out + qkv;
    launch_fill_random_bf16(x, h + qkv + inter, 6, 0.0f, 1.0f, backend.stream());

    std::vector<GemvPhase> phases;
    std::vector<int64_t> begin{0};  // the phases' bytes, for the read-only rows
    const __nv_bfloat16* next = w;
    for (int l = 0; l < m.layers; ++l) {
      auto take = [&](int64_t rows, int64_t cols, const __nv_bfloat16* in, __nv_bfloat16* out, GemvStore store) {
        phases.push_back({next, in, out, static_cast<int>(rows), static_cast<int>(cols), store});
        next += rows * cols;
        begin.push_back(begin.back() + 2 * rows * cols);
      };
      take(qkv, h, x, qkv_out, GemvStore::kPlain);
      take(h, h, qkv_out, x, GemvStore::kAddTo);  // q's part of the span stands in for attention's output
      take(2 * inter, h, x, act, GemvStore::kSiluGated);
      take(h, inter, act, x, GemvStore::kAddTo);
    }
    const int count = static_cast<int>(phases.size());
    const int64_t phase_bytes = static_cast<int64_t>(phases.size() * sizeof(GemvPhase));
    Allocation device_phases = backend.allocate(DType::kI64, {(phase_bytes + 7) / 8});
    FG_CUDA_CHECK(cudaMemcpyAsync(device_phases.tensor.data, phases.data(), static_cast<size_t>(phase_bytes),
                                  cudaMemcpyHostToDevice, backend.stream()));
    Allocation offsets = backend.allocate(DType::kI64, {static_cast<int64_t>(begin.size())});
    FG_CUDA_CHECK(cudaMemcpyAsync(offsets.tensor.data, begin.data(), begin.size() * sizeof(int64_t),
                                  cudaMemcpyHostToDevice, backend.stream()));
    const PhaseReads reads{w, static_cast<const int64_t*>(offsets.tensor.data), count};
    const auto* on_device = static_cast<const GemvPhase*>(device_phases.tensor.data);
    Allocation chain_counter_words = backend.allocate(DType::kI32, {count + 1});
    auto* chain_counters = static_cast<unsigned*>(chain_counter_words.tensor.data);

    const double one_read_us = probe_graph_us(backend, [&] { launch_read_only(w, 2 * total, sink, backend.stream()); });
    const ProbeTable table{2 * total, m.layers, count, one_read_us, copy_gbps, 14, 48};
    auto print_row = [&](const std::string& name, double us) {
      result.push_back(probe_table_row(table, m.name, "run", name, us));
    };
    print_row("one read of all the bytes (one launch)", one_read_us);
    for (const int threads : {256, 1024}) {
      const PhaseProbeConfig reads_config{0, true, 1024 / threads, threads, 0};  // the chain's grid, preload
      const std::string grid = threads == 256 ? "4 x 256 / SM" : "1 x 1024 / SM";
      print_row("reads only, launches, " + grid + ", preload", probe_graph_us(backend, [&] {
                  launch_phase_reads_chained(reads, reads_config, barrier, sink, backend.stream());
                }));
      print_row("reads only, persistent, " + grid + ", preload", probe_graph_us(backend, [&] {
                  launch_phase_reads_persistent(reads, reads_config, barrier, sink, backend.stream());
                }));
      for (const bool dynamic : {false, true}) {
        const GemvChainConfig config{threads, 1, dynamic};
        const std::string name = grid + (dynamic ? ", rows handed out" : ", rows fixed");
        print_row("GEMV launches, " + name, probe_graph_us(backend, [&] {
                    launch_gemv_chain_chained(on_device, phases.data(), count, config, chain_counters,
                                              backend.stream());
                  }));
        print_row("GEMV persistent, " + name, probe_graph_us(backend, [&] {
                    launch_gemv_chain_persistent(on_device, phases.data(), count, config, chain_counters,
                                                 backend.stream());
                  }));
      }
    }
    for (const bool dynamic : {false, true})
      timelines.push_back({std::string(m.name) + (dynamic ? ", handed out" : ", fixed"),
                           timeline_of(backend, on_device, phases, dynamic, chain_counters)});
  }
  print_timelines(timelines);
  return result;
}

}  // namespace fg::cuda
