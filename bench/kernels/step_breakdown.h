// bench/kernels/step_breakdown.h — where a graph-replayed step's time goes, kernel by kernel.
//
// A profiler that serialises kernels (ncu) or flushes caches between them measures each kernel
// alone; in a graph replay with PDL the kernels overlap their neighbours' start and end, and what
// a kernel costs the step is the time it adds to the chain. This measures exactly that: the
// step's work is captured as one graph, and for every k the graph of its first k nodes (a prefix
// of the chain) is replayed; node k's share is the median time of prefix k minus that of prefix
// k - 1. The shares add up to the whole step's replay time. Being differences of medians, they
// carry the replay's jitter (about a microsecond): a kernel that adds almost nothing can show a
// small negative share, so read sums over many launches.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <string>
#include <vector>

namespace fg::bench {

// The kernels of one name (namespaces stripped, template arguments kept) and what they add to
// the step, in the order they first appear in it.
struct KernelShare {
  std::string name;
  int launches = 0;
  double us = 0.0;
  // Registers per thread of the kernel (-1 for a library's kernel, which the runtime cannot look
  // up). They decide how many of its blocks fit beside the previous kernel's under PDL, which
  // moved a kernel's share by 4 us in one case (bench/RESULTS.md, 2026-12-01).
  int registers = -1;
};

struct StepBreakdown {
  double step_us = 0.0;  // the whole graph's replay time (median)
  std::vector<KernelShare> kernels;
};

// Captures `work` on `stream` (which must not be capturing) and measures every prefix of the
// captured chain with `reps` timed replays after a few warm-up ones. The nodes are taken in
// dependency order; a graph that is not a chain (a node with several dependencies) is refused
// with fg::Error. `work` runs once, during the capture.
StepBreakdown breakdown_captured_step(cudaStream_t stream, const std::function<void()>& work, int reps);

}  // namespace fg::bench
