// backend/cuda/phase_boundaries.h — `bench kernels --tables phase_boundaries`: what the boundary
// between two dependent weight reads of a decode step costs, as a PDL launch boundary (what the
// step runs today) and as a grid barrier in one resident kernel (what a persistent layer kernel
// would run), with and without an L2 prefetch of the phase ahead before the wait
// (phase_read_kernels.h). The phases are the reads of the model shapes' layers in order (weights
// and a 512-position KV cache); each row's cost per boundary is its time beyond one read of the
// same bytes, over the phases.
//
// What it found (bench/RESULTS.md, 2026-12-01 session 15, the 1B's layers): a launch boundary
// costs 3.2-4.0 µs (more where a launch's registers leave little room for the next one's blocks:
// 6.4 on the 8B's phases at 48 registers, 3.6 at 33); a grid barrier 2.0 µs, and 1.4 µs when each
// thread's first loads of the phase ahead are issued before it. Reading further ahead (L2 bulk
// prefetches, copies to shared memory) made every row slower, and phases of 16 bytes cost about
// the same per boundary: a boundary is nearly all synchronization. So a resident layer kernel
// that meets its phases at barriers would save about 2 µs per boundary (160-180 µs of the 1B's
// batch-1 step), and reaching the 0.66 ms target needs phases that overlap. Split-K layers (three
// phases, attention with o_proj and gate/up with down) read a 1B layer in 37 µs as launches
// against 43 for five, if few blocks add the partial sums (132: 0.5 µs a phase; 528: 7 µs). The
// table's second part reads down_proj by column chunks, as such a kernel would as the weight is
// stored today: at best 0.82x the speed of reading it whole. Session 16: launches whose blocks
// wait at a counter for the launch before's blocks, rather than for its grid to complete, are
// slower than PDL's wait (1B 3.9 against 3.2 µs per boundary with blocks that fill the SM; 5.7
// against 3.2 with small ones), with or without the wait for the grid before at their exit.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>

namespace fg {
class CudaBackend;
}

namespace fg::cuda {

nlohmann::json bench_phase_boundaries(CudaBackend& backend, double copy_gbps);

// One row of a probe's table, printed and returned as JSON (the row's name under `name_key`): µs per
// layer, GB/s and % of the copy bandwidth over `bytes`, and µs per boundary (the time beyond one
// read of the same bytes, over the phases).
struct ProbeTable {
  int64_t bytes;
  int layers, phases;
  double one_read_us, copy_gbps;
  int model_width, name_width;  // of the printed columns
};
nlohmann::json probe_table_row(const ProbeTable& table, const std::string& model, const char* name_key,
                               const std::string& name, double us);

// The probes' timing: `work` run once eagerly (a launch error shows outside a capture), then
// captured into a graph, whose replays are timed: the median microseconds of kProbeReps.
inline constexpr int kProbeReps = 20;
double probe_graph_us(CudaBackend& backend, const std::function<void()>& work);

}  // namespace fg::cuda
