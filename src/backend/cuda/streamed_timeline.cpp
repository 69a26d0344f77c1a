// backend/cuda/streamed_timeline.cpp — where a streamed launch's time goes between the launch
// before it and the one after (see streamed_timeline.h). The JSON also holds the last chain's
// blocks one by one, with the SM each ran on.
#include "backend/cuda/streamed_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "core/cuda/cuda_check.h"
#include "backend/cuda/fill_kernels.h"
#include "backend/cuda/streamed_linear.h"
#include "core/error.h"

namespace fg::cuda {

namespace {

constexpr int kMaxBlocks = 1024;  // room per launch in the timeline (a grid has at most kStreamedBlocksPerSm x SMs)
constexpr int kChainLayers = 3;   // each with its own weights, so that L2 holds none of the next
constexpr int kWarmups = 3, kRecorded = 7;

// One matmul of the chain, as the 8B decode step runs it: plain (run) or gated (run_gated).
struct ChainLink {
  const char* name;
  int64_t rows, in;  // gated: the gate/up span's rows
  bool gated;
};

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

// One launch's events in microseconds of the global timer, and the SM of each block, over its
// blocks (those that recorded), in block order.
struct LaunchEvents {
  std::vector<double> by_event[kStreamedEvents];
  std::vector<int> sm;
};

LaunchEvents events_of(const std::vector<unsigned long long>& timeline, int launch) {
  LaunchEvents e;
  for (int b = 0; b < kMaxBlocks; ++b) {
    const unsigned long long* block = &timeline[(static_cast<size_t>(launch) * kMaxBlocks + b) * kTimelineSlots];
    if (block[kEventStart] == 0) continue;
    for (int ev = 0; ev < kStreamedEvents; ++ev) e.by_event[ev].push_back(static_cast<double>(block[ev]) * 1e-3);
    e.sm.push_back(static_cast<int>(block[kTimelineSm]));
  }
  return e;
}

// Each block's [SM, then its events in microseconds after `origin`], for the JSON: what a
// question the table does not answer (do the late blocks share SMs, or a part of the chip?) needs.
nlohmann::json block_rows(const LaunchEvents& e, double origin) {
  nlohmann::json blocks = nlohmann::json::array();
  for (size_t b = 0; b < e.sm.size(); ++b) {
    nlohmann::json row = nlohmann::json::array({e.sm[b]});
    for (int ev = 0; ev < kStreamedEvents; ++ev) row.push_back(e.by_event[ev][b] - origin);
    blocks.push_back(row);
  }
  return blocks;
}

}  // namespace

nlohmann::json bench_streamed_timeline(CudaBackend& backend) {
  if (!kStreamedTimeline) {
    fmt::print("\nStreamed launch timeline: not in this build (set kStreamedTimeline in streamed_linear.h)\n");
    return nlohmann::json::object({{"skipped", "built without kStreamedTimeline"}});
  }
  const int64_t hidden = 4096, intermediate = 14336, qkv = 6144;  // Llama-3.1-8B
  const std::vector<ChainLink> layer = {{"qkv_proj", qkv, hidden, false},
                                        {"o_proj", hidden, hidden, false},
                                        {"gate_up (gated)", 2 * intermediate, hidden, true},
                                        {"down_proj", hidden, intermediate, false}};
  const int launches = kChainLayers * static_cast<int>(layer.size());
  FG_CHECK(int64_t{kStreamedBlocksPerSm} * backend.sm_count() <= kMaxBlocks,
           "bench kernels: the streamed timeline holds {} blocks per launch, a grid here may have {}", kMaxBlocks,
           int64_t{kStreamedBlocksPerSm} * backend.sm_count());
  StreamedLinear streamed(backend.sm_count());
  std::vector<Allocation> weights;
  uint64_t seed = 1;
  for (int l = 0; l < kChainLayers; ++l) {
    for (const ChainLink& link : layer) {
      weights.push_back(backend.allocate(DType::kBF16, {link.rows, link.in}));
      launch_fill_random_bf16(static_cast<__nv_bfloat16*>(weights.back().tensor.data), link.rows * link.in, seed++,
                              0.0f, 1.0f / std::sqrt(static_cast<float>(link.in)), backend.stream());
    }
  }
  Allocation x = backend.allocate(DType::kBF16, {16, intermediate});
  launch_fill_random_bf16(static_cast<__nv_bfloat16*>(x.tensor.data), 16 * intermediate, seed++, 0.0f, 1.0f,
                          backend.stream());
  Allocation out = backend.allocate(DType::kBF16, {16, 2 * intermediate});
  Allocation timeline = backend.allocate(DType::kI64, {int64_t{launches} * kMaxBlocks * kTimelineSlots});
  auto* events = static_cast<unsigned long long*>(timeline.tensor.data);
  const size_t timeline_bytes = timeline.tensor.nbytes();

  nlohmann::json rows = nlohmann::json::array();
  fmt::print("\nStreamed launch timeline, Llama-3.1-8B matmuls back to back ({} layers, own weights each), "
             "median of {} chains;\nmicroseconds after the previous launch's last block ended "
             "(the first launch: after its first block started); med / max over the blocks\n",
             kChainLayers, kRecorded);
  fmt::print("{:<16} {:>2} {:>4} | {:>13} | {:>13} | {:>13} | {:>13} | {:>13} | {:>7} {:>6}\n", "launch", "M", "grid",
             "start", "waited", "first data", "last data", "ended", "span us", "GB/s");
  for (const int64_t m : {int64_t{1}, int64_t{16}}) {
    auto chain = [&](bool record) {
      for (int i = 0; i < launches; ++i) {
        const ChainLink& link = layer[static_cast<size_t>(i) % layer.size()];
        streamed.record_timeline(record ? events + static_cast<size_t>(i) * kMaxBlocks * kTimelineSlots : nullptr);
        const auto* w = static_cast<const __nv_bfloat16*>(weights[static_cast<size_t>(i)].tensor.data);
        const auto* xs = static_cast<const __nv_bfloat16*>(x.tensor.data);
        if (link.gated)
          streamed.run_gated(xs, w, static_cast<__nv_bfloat16*>(out.tensor.data), m, link.in, link.rows / 2,
                             backend.stream());
        else
          streamed.run(xs, w, nullptr, LinearOutputs::whole(out.tensor.data, link.rows), false, m, link.in,
                       link.rows, backend.stream());
      }
      streamed.record_timeline(nullptr);
    };
    for (int r = 0; r < kWarmups; ++r) chain(false);
    // [launch][event statistic] over the recorded chains
    std::vector<std::vector<std::vector<double>>> stats(static_cast<size_t>(launches));
    std::vector<int> grids(static_cast<size_t>(launches), 0);
    std::vector<nlohmann::json> last_chain(static_cast<size_t>(launches));  // block_rows of the last chain
    for (int r = 0; r < kRecorded; ++r) {
      FG_CUDA_CHECK(cudaMemsetAsync(events, 0, timeline_bytes, backend.stream()));
      chain(true);
      backend.synchronize();
      std::vector<unsigned long long> host(timeline_bytes / sizeof(unsigned long long));
      FG_CUDA_CHECK(cudaMemcpy(host.data(), events, timeline_bytes, cudaMemcpyDeviceToHost));
      double previous_end = NAN;
      for (int i = 0; i < launches; ++i) {
        const LaunchEvents e = events_of(host, i);
        grids[static_cast<size_t>(i)] = static_cast<int>(e.by_event[kEventStart].size());
        const double origin = std::isnan(previous_end) ? quantile(e.by_event[kEventStart], 0.0) : previous_end;
        std::vector<double> s;
        for (int ev = 0; ev < kStreamedEvents; ++ev) {
          s.push_back(quantile(e.by_event[ev], 0.5) - origin);
          s.push_back(quantile(e.by_event[ev], 1.0) - origin);
        }
        s.push_back(quantile(e.by_event[kEventExit], 1.0) - origin);  // the span
        stats[static_cast<size_t>(i)].push_back(s);
        if (r == kRecorded - 1) last_chain[static_cast<size_t>(i)] = block_rows(e, origin);
        previous_end = quantile(e.by_event[kEventExit], 1.0);
      }
    }
    for (int i = 0; i < launches; ++i) {
      const ChainLink& link = layer[static_cast<size_t>(i) % layer.size()];
      std::vector<double> med;
      for (size_t k = 0; k < stats[static_cast<size_t>(i)][0].size(); ++k) {
        std::vector<double> across;
        for (const auto& s : stats[static_cast<size_t>(i)]) across.push_back(s[k]);
        med.push_back(quantile(across, 0.5));
      }
      const double span = med.back();
      const double gbps = static_cast<double>(link.rows * link.in * 2) / (span * 1e-6) / 1e9;
      fmt::print("{:<16} {:>2} {:>4} | {:>6.2f} {:>6.2f} | {:>6.2f} {:>6.2f} | {:>6.2f} {:>6.2f} | {:>6.2f} {:>6.2f} | "
                 "{:>6.2f} {:>6.2f} | {:>7.2f} {:>6.0f}\n",
                 link.name, m, grids[static_cast<size_t>(i)], med[0], med[1], med[2], med[3], med[4], med[5], med[6],
                 med[7], med[8], med[9], span, i == 0 ? NAN : gbps);
      rows.push_back({{"launch", i},
                      {"matmul", link.name},
                      {"m", m},
                      {"blocks", grids[static_cast<size_t>(i)]},
                      {"start_us", {med[0], med[1]}},
                      {"waited_us", {med[2], med[3]}},
                      {"first_data_us", {med[4], med[5]}},
                      {"last_data_us", {med[6], med[7]}},
                      {"ended_us", {med[8], med[9]}},
                      {"span_us", span},
                      {"last_chain_blocks_sm_then_us", last_chain[static_cast<size_t>(i)]}});
    }
  }
  return rows;
}

}  // namespace fg::cuda
