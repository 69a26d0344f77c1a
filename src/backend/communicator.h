// backend/communicator.h — the collectives of tensor parallelism, as one rank sees them.
//
// A communicator joins the `world_size()` ranks of one tensor-parallel group. Every rank calls the
// same collectives in the same order with tensors of the same shapes (each rank's model runs the
// same op sequence); a collective returns on a rank once that rank's result is final. The model
// reaches them through the Backend op set (Backend::all_reduce_sum, all_gather_columns), so a
// backend records them in its graphs like any other op: the CPU backend as closures, and an NCCL
// communicator on the CUDA backend inside the captured stream.
//
// Results are deterministic: the sum of an all-reduce is taken in a fixed order of ranks, so that
// a step gives the same bits on every rank and in every run.
#pragma once

#include "core/tensor.h"

namespace fg {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // In place on every rank: x = x of rank 0 + x of rank 1 + ... + x of rank N-1, summed in that
  // order, so every rank holds the same bits. x F32, the same shape on every rank.
  virtual void all_reduce_sum(const Tensor& x) = 0;
  // The vocabulary-parallel LM head's gather: each rank's shard [n, C] lands in out [n, N * C] of
  // every rank, rank r's in columns [r * C, (r + 1) * C). F32, the same shapes on every rank.
  virtual void all_gather_columns(const Tensor& shard, const Tensor& out) = 0;
};

}  // namespace fg
