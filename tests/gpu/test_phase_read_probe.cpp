// tests/gpu/test_phase_read_probe.cpp — the phase-boundary probe (phase_read_kernels.h) that `bench
// kernels --tables phase_boundaries` times: both launchers read every phase whole and once, with
// every configuration the table runs; every block adds its split-K sums once per phase; a matrix
// read by column chunks is read whole and once; and a persistent grid that cannot be resident is
// refused (its blocks would wait forever for blocks that never start).
#include <gtest/gtest.h>

#include <cstring>

#include "backend/cuda/phase_read_kernels.h"
#include "core/error.h"
#include "gpu/cuda_kernels_env.h"

namespace fg {
namespace {

using namespace cuda_kernel_test;

struct Probe {
  Env e;
  std::vector<uint32_t> words;
  std::vector<int64_t> begin;
  Tensor data, offsets, counters;  // counters: [barrier, sink]
  uint32_t expected = 0;           // the XOR of every word, on the host

  // Phases of uneven sizes (16-byte multiples), some smaller than the grid has blocks, so that
  // shares round unevenly and some are empty.
  explicit Probe(std::vector<int64_t> phase_bytes) {
    begin.push_back(0);
    for (int64_t b : phase_bytes) begin.push_back(begin.back() + b);
    words.resize(static_cast<size_t>(begin.back() / 4));
    for (uint32_t& w : words) {
      w = static_cast<uint32_t>(e.rng());
      expected ^= w;
    }
    data = e.device(DType::kI32, words, {static_cast<int64_t>(words.size())});
    offsets = e.device(DType::kI64, begin, {static_cast<int64_t>(begin.size())});
    counters = e.alloc(DType::kI32, {2});
  }
  cuda::PhaseReads reads() const {
    return {data.data, static_cast<const int64_t*>(offsets.data), static_cast<int>(begin.size()) - 1};
  }
  unsigned* barrier() const { return static_cast<unsigned*>(counters.data); }
  unsigned* sink() const { return barrier() + 1; }
  uint32_t read_sink() {
    e.gpu.synchronize();
    return static_cast<uint32_t>(gpu_test::download<int32_t>(counters)[1]);
  }
  void zero_sink() { gpu_test::upload(counters, std::vector<int32_t>{0x5a5a5a5a, 0}); }
};

// The last three: chained launches that wait at a counter (the persistent launcher refuses them).
std::vector<cuda::PhaseProbeConfig> configs() {
  return {{0, false, 4, 256, 0},
          {32 << 10, false, 4, 256, 0},
          {0, true, 4, 256, 0},
          {0, false, 1, 1024, 200 * 1024},
          {int64_t{1} << 30, true, 1, 1024, 200 * 1024},
          {0, true, 4, 256, 48 << 10, 48 << 10},
          {0, false, 1, 1024, 200 * 1024, 192 << 10},
          {0, true, 4, 256, 0, 0, true},
          {0, true, 1, 1024, 200 * 1024, 0, true},
          {0, true, 4, 256, 0, 0, true, false}};
}

TEST(PhaseReadProbe, BothLaunchersReadEveryPhaseWholeAndOnce) {
  FG_REQUIRE_GPU();
  Probe p({16, 4096, 1 << 20, 48, 3 << 20, 1 << 16});
  for (const cuda::PhaseProbeConfig& config : configs()) {
    SCOPED_TRACE(testing::Message() << "prefetch " << config.prefetch_bytes << ", preload " << config.preload
                                    << ", stash " << config.stash_bytes << ", " << config.blocks_per_sm << " x "
                                    << config.threads << " per SM");
    const auto arrivals = [&] { return static_cast<unsigned>(gpu_test::download<int32_t>(p.counters)[0]); };
    const unsigned every_block_every_phase = 6u * config.blocks_per_sm * static_cast<unsigned>(p.e.gpu.sm_count());
    p.zero_sink();
    cuda::launch_phase_reads_chained(p.reads(), config, p.barrier(), p.sink(), p.e.gpu.stream());
    EXPECT_EQ(p.read_sink(), p.expected) << "chained";
    if (config.flag_waits) {
      EXPECT_EQ(arrivals(), every_block_every_phase) << "chained: every block arrives once per phase";
      EXPECT_THROW(cuda::launch_phase_reads_persistent(p.reads(), config, p.barrier(), p.sink(), p.e.gpu.stream()),
                   Error);
      continue;
    }
    p.zero_sink();
    cuda::launch_phase_reads_persistent(p.reads(), config, p.barrier(), p.sink(), p.e.gpu.stream());
    EXPECT_EQ(p.read_sink(), p.expected) << "persistent";
    EXPECT_EQ(arrivals(), every_block_every_phase) << "persistent: every block arrives once per phase";
  }
}

TEST(PhaseReadProbe, SplitKSumsGetOneAddPerBlockAndPhase) {
  FG_REQUIRE_GPU();
  Probe p({16, 4096, 1 << 20, 48, 3 << 20, 1 << 16});
  const std::vector<int32_t> width{0, 300, 0, 2048, 5, 1};
  const Tensor widths = p.e.device(DType::kI32, width, {6});
  const Tensor sums = p.e.alloc(DType::kI64, {2048});
  cuda::PhaseReads reads = p.reads();
  reads.reduce_width = static_cast<const int*>(widths.data);
  reads.sums = static_cast<unsigned long long*>(sums.data);
  for (const cuda::PhaseProbeConfig& config : {configs()[2], configs()[3]}) {
    SCOPED_TRACE(testing::Message() << config.blocks_per_sm << " x " << config.threads << " per SM");
    const int64_t blocks = int64_t{config.blocks_per_sm} * p.e.gpu.sm_count();
    for (const bool persistent : {false, true}) {
      gpu_test::upload(sums, std::vector<int64_t>(2048, 0));
      p.zero_sink();
      if (persistent) cuda::launch_phase_reads_persistent(reads, config, p.barrier(), p.sink(), p.e.gpu.stream());
      else cuda::launch_phase_reads_chained(reads, config, p.barrier(), p.sink(), p.e.gpu.stream());
      EXPECT_EQ(p.read_sink(), p.expected) << "persistent " << persistent;
      const std::vector<int64_t> got = gpu_test::download<int64_t>(sums);
      for (int i = 0; i < 2048; ++i) {
        int64_t phases = 0;
        for (int32_t w : width) phases += i < w ? 1 : 0;
        ASSERT_EQ(got[static_cast<size_t>(i)], phases * blocks * (i + 1)) << "element " << i << ", persistent "
                                                                          << persistent;
      }
    }
  }
}

TEST(PhaseReadProbe, ColumnChunksReadTheMatrixWholeAndOnce) {
  FG_REQUIRE_GPU();
  Probe p({300 * 4096});  // one matrix of 300 rows of 4096 bytes (300: not a multiple of a pass)
  for (const int chunk : {32, 64, 256}) {
    for (const int threads : {256, 1024}) {
      p.zero_sink();
      cuda::launch_column_chunk_reads(p.data.data, 300, 4096, chunk, threads, p.sink(), p.e.gpu.stream());
      EXPECT_EQ(p.read_sink(), p.expected) << "chunks of " << chunk << " bytes, " << threads << " threads";
    }
  }
  EXPECT_THROW(cuda::launch_column_chunk_reads(p.data.data, 300, 4096, 48, 256, p.sink(), p.e.gpu.stream()), Error)
      << "4096 is not a multiple of 48";
}

TEST(PhaseReadProbe, PersistentGridThatCannotBeResidentIsRefused) {
  FG_REQUIRE_GPU();
  Probe p({1 << 16});
  const cuda::PhaseProbeConfig too_many{0, false, 4, 1024, 0};  // 4096 threads per SM: more than an SM holds
  EXPECT_THROW(cuda::launch_phase_reads_persistent(p.reads(), too_many, p.barrier(), p.sink(), p.e.gpu.stream()),
               Error);
}

}  // namespace
}  // namespace fg
