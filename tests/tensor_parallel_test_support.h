// tests/tensor_parallel_test_support.h — building a tensor-parallel runner over a fixture model
// (ranks as threads on CPU backends, weights read shard by shard from the checkpoint) and reading
// each rank's logits.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "model/safetensors.h"
#include "runner/tensor_parallel_runner.h"
#include "runner_test_support.h"
#include "test_support.h"

namespace fg::test {

// The fixture's config as its transformers references were made (rope inverse frequencies in bf16).
inline ModelConfig tp_fixture_config(const std::string& fixture) {
  ModelConfig config = load_model_config(model_fixture(fixture) + "/config.json");
  config.rope.round_inv_freq_to_bf16 = true;
  return config;
}

// A runner of `size` ranks over fixture `fixture`, its KV caches poisoned (NaN where nothing was
// written) and its graphs captured. One backend thread per rank: the ranks are the parallelism.
inline std::unique_ptr<TensorParallelRunner> make_tp_runner(
    const std::string& fixture, int size, const RunnerOptions& options, int64_t num_blocks,
    std::chrono::milliseconds timeout = std::chrono::minutes(5)) {
  const ModelConfig config = tp_fixture_config(fixture);
  auto checkpoint = std::make_shared<const Checkpoint>(Checkpoint::open(model_fixture(fixture)));
  TensorParallelOptions tp;
  tp.size = size;
  tp.threads_per_rank = 1;
  tp.num_kv_blocks = num_blocks;
  tp.block_size = 16;
  tp.kv_dtype = DType::kF32;
  tp.collective_timeout = timeout;
  auto runner = std::make_unique<TensorParallelRunner>(
      config, [&](Backend& backend, const TensorParallelShard& shard) {
        return load_weights(config, checkpoint, backend, shard);
      },
      tp, options, [](const std::string&) {});
  for (int r = 0; r < size; ++r) poison_kv_cache(runner->backend(r), runner->kv(r));
  runner->capture_graphs();
  return runner;
}

// Every rank's first `rows` logits rows as the last step left them.
inline std::vector<std::vector<float>> rank_logits(TensorParallelRunner& runner, int64_t rows) {
  std::vector<std::vector<float>> out;
  for (int r = 0; r < runner.size(); ++r) out.push_back(copy_logits(runner.model(r), rows));
  return out;
}

// Poisons every rank's activations and step buffers (as RunnerTest::run_graph_and_eager does).
inline void poison_ranks(TensorParallelRunner& runner) {
  for (int r = 0; r < runner.size(); ++r) {
    runner.model(r).fill_activations(0xFF);
    runner.runner(r).poison_step_buffers();
  }
}

}  // namespace fg::test
