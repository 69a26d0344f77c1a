// attention/cuda/reference_attention.h — a deliberately simple paged causal attention on the GPU:
// one warp per (query token, head), fp32 throughout, an online softmax over the request's
// context in position order. Slow, and obviously correct: the GPU-side oracle of the fast
// backends.
//
// Graph support: always (every launch parameter is a tensor shape; per-step values are read on
// the device). Padding contract: the default one (PaddingContract{}).
#pragma once

#include <memory>

#include "attention/cuda/attention_backend.h"

namespace fg {

std::unique_ptr<AttentionBackend> make_reference_attention(const AttentionLimits& limits);

}  // namespace fg
