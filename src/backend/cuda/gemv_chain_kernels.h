// backend/cuda/gemv_chain_kernels.h — a probe for `bench kernels --tables gemv_chain`: a chain of
// one-token matrix-vector products (a decode layer's matmuls, without the attention and the
// norms), run as one resident kernel whose phases meet at grid barriers, or as one PDL launch per
// phase with the same grid and the same loads.
//
// Why: the phase probe (phase_read_kernels.h) put a grid barrier at 1.4 µs against 3.2-4.0 for a
// launch boundary, for reads alone. A resident layer kernel also multiplies: each block brings the
// phase's input vector to shared memory after the barrier, and each warp sums its rows. This probe
// measures whether a resident chain of real products keeps the barrier's advantage, before the
// engine's kernels are rebuilt around one.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace fg::cuda {

// What a phase does with row r's sum s_r = W[r] · in (fp32, in a fixed order: each lane's chunks of
// 8 in order, then the warp's butterfly):
// - kPlain: out[r] = bf16(s_r);
// - kAddTo: out[r] = bf16(out[r] + s_r) (a residual add);
// - kSiluGated: rows = 2h, gate rows then up rows: out[j] = bf16(silu(g) * u) with g = bf16(s_j),
//   u = bf16(s_{h+j}) (SiLU-and-multiply as the engine rounds it).
enum class GemvStore : int { kPlain, kAddTo, kSiluGated };

// One phase: W [rows, cols] BF16 row-major, in [cols] BF16, out as above; cols a multiple of
// kGemvChainColsMultiple, every pointer 16-byte aligned. Phase p may read what phases before it
// wrote, and must not write what it reads.
struct GemvPhase {
  const __nv_bfloat16* w = nullptr;
  const __nv_bfloat16* in = nullptr;
  __nv_bfloat16* out = nullptr;
  int rows = 0, cols = 0;
  GemvStore store = GemvStore::kPlain;
};

inline constexpr int kGemvChainColsMultiple = 1024;  // 32 lanes x 16-byte chunks of 8 x a load group

// How the chain runs. threads: 256 (four blocks per SM) or 1024 (one); either way a thread has 64
// registers and an SM 32 warps. preload_groups: the load groups (kGemvChainGroup 16-byte loads
// per lane) of each warp's first row issued before the wait for the phase before (1 or 2).
// dynamic: after its first batch of rows, a block takes whichever batch its phase's counter hands
// out next (false: every blocks-th batch from its own). timeline: null, or
// [phase][block][kGemvEvents] nanoseconds of the GPU's global timer: when the block's wait ended,
// when its input was in shared memory, when its rows were done.
struct GemvChainConfig {
  int threads = 256;
  int preload_groups = 1;
  bool dynamic = false;
  unsigned long long* timeline = nullptr;
};
inline constexpr int kGemvChainGroup = 4;
enum GemvEvent : int { kGemvWaited, kGemvInputReady, kGemvDone, kGemvEvents };

// The grid's blocks on a device of sm_count SMs.
inline int gemv_chain_blocks(const GemvChainConfig& config, int sm_count) { return 1024 / config.threads * sm_count; }

// `phases`: `count` phases in device memory; `host_phases`: the same on the host, whose shapes
// both launchers check (and whose largest input sets the shared memory of each block).
//
// counters: count + 1 words that the launchers zero on the stream first: the grid barrier's count,
// then each phase's batch counter (GemvChainConfig::dynamic).
//
// Persistent: one launch whose blocks are all resident (checked); a block starts phase p once
// every block has ended phase p - 1 (counters[0]).
void launch_gemv_chain_persistent(const GemvPhase* phases, const GemvPhase* host_phases, int count,
                                  const GemvChainConfig& config, unsigned* counters, cudaStream_t stream);
// Chained: one PDL launch per phase, the same grid and loads, each waiting (griddepcontrol) for the
// launch before.
void launch_gemv_chain_chained(const GemvPhase* phases, const GemvPhase* host_phases, int count,
                               const GemvChainConfig& config, unsigned* counters, cudaStream_t stream);

}  // namespace fg::cuda
