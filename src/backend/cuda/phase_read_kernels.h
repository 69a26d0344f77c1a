// backend/cuda/phase_read_kernels.h — launchers of a probe for `bench kernels --tables
// phase_boundaries`: what a boundary between two dependent weight reads costs, as a launch
// boundary and as a grid-wide barrier inside one resident (persistent) kernel.
//
// A decode step at batch 1 is a chain of weight reads ("phases": q/k/v, o_proj, gate/up, down per
// layer), each of which may start its arithmetic only once the phase before it is complete (its
// input is that phase's output). The weights themselves depend on nothing. The probe reads the
// phases' bytes in that order and nothing else, so that the time beyond one read of all the bytes
// is what the boundaries cost.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fg::cuda {

// The phases: phase p reads bytes [begin[p], begin[p + 1]) of `base` (16-byte multiples). A
// block reads its contiguous share of every phase.
struct PhaseReads {
  const void* base = nullptr;
  const int64_t* begin = nullptr;  // [phases + 1] device, byte offsets, ascending
  int phases = 0;
  // Split-K phases: after its share of phase p, every block adds reduce_width[p] values into
  // `sums`, one 64-bit integer add each (what a deterministic split-K reduction in fixed point
  // would make; element i gets i + 1, so that a test can count the contributions). Null: none.
  const int* reduce_width = nullptr;   // [phases] device
  unsigned long long* sums = nullptr;  // [the largest reduce_width]
};

// How a block treats the phase ahead: before it waits for the phase before to complete, it may
// ask L2 for the first `prefetch_bytes` of its share (one bulk prefetch; 0: none), and it may issue
// its threads' first group of loads (`preload`: 8 x 16 bytes per thread, into registers), and it
// may copy the first `stash_bytes` of its share to shared memory (cp.async), as a real kernel can
// do with its weights, which depend on nothing.
struct PhaseProbeConfig {
  int64_t prefetch_bytes = 0;
  bool preload = false;
  int blocks_per_sm = 1;
  int threads = 256;
  size_t shared_bytes = 0;  // dynamic shared memory per block: the stash, and beyond it room that
                            // models a kernel whose blocks fill an SM, so that a launch's blocks
                            // start only as the launch before's leave
  int64_t stash_bytes = 0;  // a multiple of 16, at most shared_bytes
  // Chained launches only: each launch after the first waits for the blocks of the launch before
  // to arrive at a counter (release add, acquire poll), as the persistent grid's blocks do, rather
  // than for that grid to complete (griddepcontrol).
  bool flag_waits = false;
  // With flag_waits: each block waits for the grid before it to complete (griddepcontrol) before it
  // exits, so that a grid's completion implies its predecessor's (pdl.cuh); false leaves that out.
  bool grid_wait_at_exit = true;
};

// Both launchers XOR every 32-bit word they read into *sink (which the caller zeroes first), so
// that a test can check that each phase was read whole and once.

// One PDL launch per phase: each waits for the one before before it reads (griddepcontrol, or
// with flag_waits every block's arrival at `counter`, which the launcher then zeroes on the stream
// first; every block arrives once per phase).
void launch_phase_reads_chained(const PhaseReads& reads, const PhaseProbeConfig& config, unsigned* counter,
                                unsigned* sink, cudaStream_t stream);

// One launch of blocks_per_sm x SMs blocks, all resident (checked), that read every phase; a
// block starts phase p once every block has ended phase p - 1 (a counter in `barrier`, which the
// launcher zeroes on the stream first).
void launch_phase_reads_persistent(const PhaseReads& reads, const PhaseProbeConfig& config, unsigned* barrier,
                                   unsigned* sink, cudaStream_t stream);

// Reads a row-major matrix [rows, row_bytes] by column chunks: block b reads bytes
// [b * chunk_bytes, (b + 1) * chunk_bytes) of every row (row_bytes / chunk_bytes blocks; both
// multiples of 16; threads a multiple of chunk_bytes / 16), as a split-K kernel would read its
// columns of down_proj or o_proj. XORs every word into *sink, as the launchers above.
void launch_column_chunk_reads(const void* base, int64_t rows, int64_t row_bytes, int chunk_bytes, int threads,
                               unsigned* sink, cudaStream_t stream);

}  // namespace fg::cuda
