// model/tensor_parallel.h — how a Llama-family model is split over the ranks of a tensor-parallel
// group, as Megatron-LM splits it: the rank's view of the config, and which rows or columns of
// each checkpoint tensor the rank owns.
//
// q/k/v and gate/up are split by output rows (column parallel): each rank owns whole heads, its
// q heads grouped with the KV heads they read, and a slice of the MLP's intermediate features.
// o_proj and down_proj are split by input columns (row parallel): each rank's product is a partial
// sum of the full one, which an all-reduce completes (they have no bias in these architectures;
// one would be added once, after it). The LM head is split by vocabulary rows and gathered.
// Embeddings and norms are replicated (q/k norms are one [hd] weight that every head shares, so
// they go with the heads as they are); q/k/v biases are split with their rows.
//
// Where the group has more ranks than the model has KV heads, the KV heads are replicated as vLLM
// does: ranks / nkv consecutive ranks share each KV head (the ranks must be a multiple of nkv).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/config.h"

namespace fg {

struct TensorParallelShard {
  int rank = 0;
  int size = 1;

  bool active() const { return size > 1; }
};

// Rank shard.rank's view of `full`: num_heads / N query heads, max(nkv / N, 1) KV heads and
// intermediate_size / N features; vocab_size stays the full vocabulary (the width of the gathered
// logits). Fails naming the config field that N does not divide.
ModelConfig shard_config(const ModelConfig& full, const TensorParallelShard& shard);

// The first KV head rank shard.rank owns (of the full model's).
int64_t first_kv_head(const ModelConfig& full, const TensorParallelShard& shard);

// The part of a checkpoint tensor a rank owns: the whole of it (dim -1), rows [begin, begin +
// count) (dim 0) or columns [begin, begin + count) of every row (dim 1).
struct WeightSlice {
  int dim = -1;
  int64_t begin = 0, count = 0;

  bool whole() const { return dim < 0; }
};

// The slice of tensor `name` (a Hugging Face name of expected_weights(full)) rank shard.rank owns.
WeightSlice weight_slice(const ModelConfig& full, const TensorParallelShard& shard, const std::string& name);

// The shape of the slice of a tensor of shape `full_shape`.
std::vector<int64_t> slice_shape(const std::vector<int64_t>& full_shape, const WeightSlice& slice);

// Copies the slice of a row-major tensor (`full` of `full_shape`, elements of `dtype`) to `dst`,
// row-major in slice_shape: only the bytes of the slice are read.
void copy_weight_slice(const void* full, DType dtype, const std::vector<int64_t>& full_shape, const WeightSlice& slice,
                       void* dst);

}  // namespace fg
