// bench/probes/phase_boundaries.cu — a standalone probe (its own main, the CUDA runtime only): what
// the boundary between two dependent weight reads of a decode step costs, as a PDL launch boundary
// (what the engine's step runs) and as a grid barrier inside one resident kernel (what a
// persistent layer kernel would run).
//
// A decode step at batch 1 is a chain of weight reads ("phases": q/k/v, the KV cache, o_proj,
// gate/up, down per layer), each of which may start its arithmetic only once the phase before it
// is complete (its input is that phase's output). The weights themselves depend on nothing. The
// probe reads the phases' bytes in that order and nothing else, so that the time beyond one read
// of all the bytes is what the boundaries cost. Every row checks its reads first: the XOR of every
// 32-bit word read must equal the XOR the host computes, so each phase was read whole and once.
//
// What it found (bench/RESULTS.md, 2026-12-01 and 2026-12-02, one H200): a launch boundary costs
// 3.2-4.0 µs on the 1B's phases, more where a launch's registers leave little room for the next
// one's blocks (6.4 on the 8B's phases at 48 registers per thread, 3.6 at 33); a grid barrier 2.0
// µs, and 1.4 when each thread issues its first loads of the phase ahead before the wait. Phases of
// 16 bytes cost about the same per boundary: a boundary is nearly all synchronization. So a
// resident layer kernel that meets its phases at barriers would save about 2 µs per boundary
// (160-180 µs of the 1B's batch-1 step), and the 0.66 ms target needs phases that overlap.
// Variants measured then and left out of this program, all slower: L2 bulk prefetches or
// shared-memory copies of the phase ahead before the wait; launches whose blocks wait at a counter
// for the launch before's blocks rather than for its grid; reading down_proj by column chunks (at
// best 0.82x of reading it whole).
//
// CMake builds it as `probe_phase_boundaries` wherever it builds the CUDA backend (sm_90a). Run it
// on one GPU with about 4 GB free; times are medians of graph replays.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#define CHECK(call)                                                                                  \
  do {                                                                                               \
    const cudaError_t status_ = (call);                                                              \
    if (status_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                      \
                   cudaGetErrorString(status_));                                                     \
      std::exit(1);                                                                                  \
    }                                                                                                \
  } while (0)

namespace {

constexpr int kUnroll = 8;              // 16-byte loads in flight per thread
constexpr int kWarmups = 2, kReps = 20;  // graph replays

// Word i of the data: a hash of i (splitmix64), so that the host knows every word without a copy.
__host__ __device__ inline uint32_t word_at(uint64_t i) {
  uint64_t x = i + 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return static_cast<uint32_t>(x ^ (x >> 31));
}

__global__ void fill_kernel(uint32_t* p, int64_t words) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    p[i] = word_at(static_cast<uint64_t>(i));
}

// Read-only, around L1, 128-byte L2 lines, as the engine's direct matmul loads its weights;
// volatile, so that a load stays where the probe puts it (before or after a wait).
__device__ __forceinline__ uint4 load_streaming(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::128B.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// PDL (sm_90): a launch may start once the launch before allows it, and waits for that grid's
// completion before its reads.
__device__ __forceinline__ void allow_dependent_grids() { asm volatile("griddepcontrol.launch_dependents;"); }
__device__ __forceinline__ void wait_for_prerequisite_grids() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

// The grid barrier of a resident kernel: each block adds one to `count` after a phase (release),
// and starts the next once the count holds every block's arrivals so far (acquire). Only for grids
// whose blocks are all resident at once: main checks the occupancy first.
__device__ __forceinline__ void grid_barrier_arrive(unsigned* count) {
  __syncthreads();
  if (threadIdx.x == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(count) : "memory");
}
__device__ __forceinline__ void grid_barrier_wait(const unsigned* count, unsigned target) {
  if (threadIdx.x == 0) {
    unsigned seen = 0;
    do {
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(count) : "memory");
    } while (seen < target);
  }
  __syncthreads();
}

// The phases: phase p is bytes [begin[p], begin[p + 1]) of `base` (16-byte multiples). A block
// reads its contiguous share of every phase.
struct Phases {
  const uint4* base;
  const int64_t* begin;  // [count + 1] device, byte offsets, ascending
  int count;
};

// One group of this thread's loads: kUnroll vectors blockDim.x apart from `at`, zeros past `end`.
__device__ __forceinline__ void load_group(const uint4* v, int64_t at, int64_t end, uint4 (&x)[kUnroll]) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int64_t i = at + static_cast<int64_t>(u) * blockDim.x;
    x[u] = i < end ? load_streaming(v + i) : make_uint4(0, 0, 0, 0);
  }
}

// kPersistent: every phase, the grid barrier between them; else phase `first` alone, after the
// launch before (PDL). preload: the first group of loads of a phase is issued before the wait.
// Each thread XORs every word it reads; the block's XOR goes into *sink.
template <bool kPersistent>
__global__ void phase_read_kernel(const Phases phases, int first, bool preload, unsigned* barrier, unsigned* sink) {
  allow_dependent_grids();
  const int last = kPersistent ? phases.count : first + 1;
  const int64_t step = static_cast<int64_t>(blockDim.x) * kUnroll;
  unsigned acc = 0;
  for (int p = first; p < last; ++p) {
    const int64_t begin = phases.begin[p] / 16, len = phases.begin[p + 1] / 16 - begin;
    const int64_t end = begin + (blockIdx.x + 1) * len / gridDim.x;
    int64_t at = begin + blockIdx.x * len / gridDim.x + threadIdx.x;
    uint4 x[kUnroll];
    if (preload) load_group(phases.base, at, end, x);  // the weights ahead depend on nothing
    if (p == first) wait_for_prerequisite_grids();
    else grid_barrier_wait(barrier, static_cast<unsigned>(p - first) * gridDim.x);
    if (!preload) load_group(phases.base, at, end, x);
    for (;;) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) acc ^= x[u].x ^ x[u].y ^ x[u].z ^ x[u].w;
      at += step;
      if (at >= end) break;
      load_group(phases.base, at, end, x);
    }
    if (kPersistent) grid_barrier_arrive(barrier);
  }
  for (int offset = 16; offset > 0; offset >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, offset);
  if ((threadIdx.x & 31) == 0) atomicXor(sink, acc);
}

// How a row runs the phases. shared_bytes: dynamic shared memory that only makes a block fill its
// SM, as the engine's streamed matmuls' blocks do, so that a launch's blocks start only as the
// launch before's leave.
struct Config {
  const char* name;
  bool persistent, preload;
  int blocks_per_sm, threads;
  int shared_bytes;
};

const Config kRows[] = {
    {"launches, 4 x 256 / SM", false, false, 4, 256, 0},
    {"launches, 4 x 256 / SM, preload", false, true, 4, 256, 0},
    {"launches, filling the SM", false, false, 1, 1024, 200 * 1024},
    {"launches, filling the SM, preload", false, true, 1, 1024, 200 * 1024},
    {"persistent, 4 x 256 / SM", true, false, 4, 256, 0},
    {"persistent, 4 x 256 / SM, preload", true, true, 4, 256, 0},
    {"persistent, 1 x 1024 / SM", true, false, 1, 1024, 200 * 1024},
    {"persistent, 1 x 1024 / SM, preload", true, true, 1, 1024, 200 * 1024},
};

void launch_with_pdl(void (*kernel)(Phases, int, bool, unsigned*, unsigned*), const Config& c, int sms,
                     cudaStream_t stream, const Phases& phases, int first, unsigned* barrier, unsigned* sink) {
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(c.blocks_per_sm * sms));
  config.blockDim = dim3(static_cast<unsigned>(c.threads));
  config.dynamicSmemBytes = static_cast<size_t>(c.shared_bytes);
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = 1;
  CHECK(cudaLaunchKernelEx(&config, kernel, phases, first, c.preload, barrier, sink));
}

// Reads every phase once as the row says: one launch per phase, or one resident launch.
void run_row(const Config& c, const Phases& phases, int sms, unsigned* counters, cudaStream_t stream) {
  unsigned *barrier = counters, *sink = counters + 1;
  if (c.persistent) {
    CHECK(cudaMemsetAsync(barrier, 0, sizeof(unsigned), stream));
    launch_with_pdl(phase_read_kernel<true>, c, sms, stream, phases, 0, barrier, sink);
  } else {
    for (int p = 0; p < phases.count; ++p)
      launch_with_pdl(phase_read_kernel<false>, c, sms, stream, phases, p, barrier, sink);
  }
}

// Runs `work` once and checks that it read every word once (the XOR in the sink), then captures
// it into a graph and returns the median microseconds of its replays (CUDA events around each).
double checked_median_us(cudaStream_t stream, unsigned* counters, uint32_t expected, const char* what,
                         const std::function<void()>& work) {
  CHECK(cudaMemsetAsync(counters + 1, 0, sizeof(unsigned), stream));
  work();
  unsigned sink = 0;
  CHECK(cudaMemcpyAsync(&sink, counters + 1, sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  if (sink != expected) {
    std::fprintf(stderr, "%s: the reads' XOR is %08x, the host's %08x: a phase was not read whole and once\n",
                 what, sink, expected);
    std::exit(1);
  }
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  work();
  CHECK(cudaStreamEndCapture(stream, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::vector<double> us;
  for (int i = 0; i < kWarmups + kReps; ++i) {
    CHECK(cudaEventRecord(start, stream));
    CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (i >= kWarmups) us.push_back(1000.0 * ms);
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  std::sort(us.begin(), us.end());
  return (us[(us.size() - 1) / 2] + us[us.size() / 2]) / 2;
}

// A model's layers as the decode step reads them at batch 1 (each layer its own bytes, so that L2
// holds none of the next phase's).
struct Model {
  const char* name;
  int layers;
  std::vector<int64_t> phase_bytes;  // of one layer
};

std::vector<Model> models() {
  constexpr int64_t kContext = 512;  // positions of KV cache read by attention
  auto layer = [](int64_t hidden, int64_t q, int64_t kv, int64_t intermediate) {
    // q/k/v, the KV cache, o_proj, gate/up, down; BF16
    return std::vector<int64_t>{2 * (q + 2 * kv) * hidden, 2 * 2 * kv * kContext, 2 * q * hidden,
                                2 * 2 * intermediate * hidden, 2 * hidden * intermediate};
  };
  return {{"Llama-3.2-1B", 16, layer(2048, 2048, 512, 8192)},
          {"Llama-3.1-8B", 8, layer(4096, 4096, 1024, 14336)},
          {"16 B phases", 16, {16, 16, 16, 16, 16}}};  // what a boundary costs with nothing to read
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major < 9) {
    std::fprintf(stderr, "phase_boundaries: needs sm_90 (PDL), found %s (sm_%d%d)\n", prop.name, prop.major,
                 prop.minor);
    return 1;
  }
  const int sms = prop.multiProcessorCount;
  for (const Config& c : kRows) {
    auto* kernel = c.persistent ? phase_read_kernel<true> : phase_read_kernel<false>;
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, c.shared_bytes));
    int resident = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, c.threads, c.shared_bytes));
    if (c.persistent && resident < c.blocks_per_sm) {  // a block would wait forever for one that never starts
      std::fprintf(stderr, "phase_boundaries: %s: only %d blocks fit an SM\n", c.name, resident);
      return 1;
    }
  }
  int64_t most_bytes = 0;
  for (const Model& m : models()) {
    int64_t bytes = 0;
    for (int64_t b : m.phase_bytes) bytes += b;
    most_bytes = std::max(most_bytes, bytes * m.layers);
  }
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  uint32_t* data = nullptr;
  int64_t* offsets = nullptr;
  unsigned* counters = nullptr;  // [barrier, sink]
  const int64_t max_phases = 16 * 5;
  CHECK(cudaMalloc(&data, static_cast<size_t>(most_bytes)));
  // [0, total] of the one-read row, then the phase offsets [max_phases + 1].
  CHECK(cudaMalloc(&offsets, (2 + max_phases + 1) * sizeof(int64_t)));
  CHECK(cudaMalloc(&counters, 2 * sizeof(unsigned)));
  fill_kernel<<<8 * sms, 256, 0, stream>>>(data, most_bytes / 4);
  CHECK(cudaGetLastError());

  std::printf("phase boundaries on %s (%d SMs): a decode layer's reads in order (q/k/v, KV cache at 512, o_proj,\n"
              "gate/up, down), read and nothing else, as one launch per phase (PDL) or one resident kernel with a\n"
              "grid barrier per phase; graph replay, median of %d. per boundary: the time beyond one read of all\n"
              "the bytes, over the phases\n",
              prop.name, sms, kReps);
  std::printf("%-14s %-38s | %9s %8s | %12s\n", "model", "reads", "us/layer", "GB/s", "us/boundary");
  for (const Model& m : models()) {
    std::vector<int64_t> begin{0};
    for (int l = 0; l < m.layers; ++l)
      for (int64_t b : m.phase_bytes) begin.push_back(begin.back() + b);
    const int64_t total = begin.back();
    const int count = static_cast<int>(begin.size()) - 1;
    uint32_t expected = 0;
    for (int64_t i = 0; i < total / 4; ++i) expected ^= word_at(static_cast<uint64_t>(i));
    const int64_t whole[2] = {0, total};
    CHECK(cudaMemcpy(offsets, whole, sizeof(whole), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(offsets + 2, begin.data(), begin.size() * sizeof(int64_t), cudaMemcpyHostToDevice));
    const Phases one_read{reinterpret_cast<const uint4*>(data), offsets, 1};
    const Phases phases{reinterpret_cast<const uint4*>(data), offsets + 2, count};
    auto print_row = [&](const char* name, double us, double one_read_us) {
      std::printf("%-14s %-38s | %9.2f %8.0f | %12.2f\n", m.name, name, us / m.layers,
                  static_cast<double>(total) / (us * 1e-6) / 1e9, (us - one_read_us) / count);
    };
    const double one_read_us = checked_median_us(stream, counters, expected, "one read", [&] {
      run_row(kRows[0], one_read, sms, counters, stream);
    });
    print_row("one read of all the bytes (one launch)", one_read_us, one_read_us);
    for (const Config& c : kRows)
      print_row(c.name, checked_median_us(stream, counters, expected, c.name, [&] {
                  run_row(c, phases, sms, counters, stream);
                }),
                one_read_us);
  }
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(data));
  CHECK(cudaFree(offsets));
  CHECK(cudaFree(counters));
  return 0;
}
