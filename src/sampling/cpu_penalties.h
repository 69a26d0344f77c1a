// sampling/cpu_penalties.h — the CPU reference of item 0 of sampling_params.h (repetition,
// presence and frequency penalties over a step's penalty lists), the oracle of the CUDA kernel and
// the op of the CPU backend.
#pragma once

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "sampling/sampling_params.h"

namespace fg {

// In place on logits F32 [m, V] (host): for every logit-bias entry e of row r < m, original[e] = the
// logit of its token, then the logit becomes biased_logit(...); then for every penalty entry e of
// row r, original[e] = the logit of its token, then the logit becomes penalized_logit(...) with
// row r's penalties. Fails naming the
// row, entry and value on offsets that decrease or pass the capacity, tokens outside [0, V),
// negative counts and out-of-range penalties (a token listed twice in a row is caught by checked
// mode, runner/input_check.h, not here). Rows run in parallel on `pool` (nullptr: serially).
void apply_penalties_cpu(const Tensor& logits, const SamplingTensors& params, const PenaltyTensors& penalties,
                         ThreadPool* pool);

}  // namespace fg
