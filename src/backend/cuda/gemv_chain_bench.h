// backend/cuda/gemv_chain_bench.h — `bench kernels --tables gemv_chain`: the matmuls of a decode
// layer at one token (q/k/v, o_proj with its residual add, gate/up with SiLU-and-multiply, down
// with its residual add) as a chain of matrix-vector products (gemv_chain_kernels.h), run as one
// PDL launch per phase and as one resident kernel with a grid barrier per phase, beside one read
// of the same bytes and the phase probe's read-only chain (phase_read_kernels.h) of the same
// phases. µs per layer, and per boundary: the time beyond one read of the bytes, over the phases.
// Then, from the resident kernel's timeline, where each phase's time goes.
//
// What it found (bench/RESULTS.md, 2026-12-02 session 16): the barrier's advantage over a launch
// boundary that reads alone show (1.1 against 3.1 µs per boundary on the 1B's phases) does not
// survive real products. Over the five versions of this kernel measured, the best resident row
// and the best launch row were level: 39.4 against 39.5 µs per 1B layer, 112.7 against 110.7 per
// 8B layer (the engine's four launches, with their norms and RoPE: 41.3 and 113.1). The version
// here (run 8): as launches 39.5-40.9 µs per 1B layer and 120.1-124.4 per 8B layer, resident
// 41.3-43.6 and 121.2-125.1. Per phase,
// the barrier costs 0.8-2 µs and bringing the input to shared memory 0.5-2 µs, but what separates
// a phase from the read-only one is the spread of its blocks' row times (the slowest block 1-6 µs
// behind the median), which handing rows out at run time did not narrow: a warp's rows are a
// chain of dependent load groups. A resident layer kernel needs phases as deep as the streamed
// kernels' (streamed_linear.h) before its barriers pay.
#pragma once

#include <nlohmann/json.hpp>

namespace fg {
class CudaBackend;
}

namespace fg::cuda {

nlohmann::json bench_gemv_chain(CudaBackend& backend, double copy_gbps);

}  // namespace fg::cuda
