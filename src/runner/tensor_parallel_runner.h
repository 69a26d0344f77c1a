// runner/tensor_parallel_runner.h — tensor parallelism with the ranks as threads of one process,
// each rank on a CPU backend of its own (backend/cpu/cpu_communicator.h joins them).
//
// Every rank holds a ModelRunner over its shard of the model (model/tensor_parallel.h): its own
// backend, weights, activations and KV cache with its share of the KV heads. A step is staged by
// every rank from the same scheduled requests, so the ranks' metadata, buckets and padding are
// identical, and runs on N threads at once; the collectives inside each rank's forward (recorded
// in its graphs like any other op) keep the ranks in step. The gathered logits are the same bits
// on every rank, so every rank samples the same ids; rank 0's are the step's result, and a rank
// that disagrees is an error.
//
// A rank that throws marks the group failed, which makes every other rank fail in (or at) its
// next collective instead of waiting for it; the step then throws the first failure, naming its
// rank. The ranks may have stopped anywhere in their step, so the group stays failed: every later
// step fails at once with the same error (the engine then stops, and the server answers 503).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_communicator.h"
#include "model/tensor_parallel.h"
#include "runner/model_runner.h"

namespace fg {

struct TensorParallelOptions {
  int size = 2;                   // ranks
  int threads_per_rank = 0;       // each rank's CPU backend threads (0: the hardware threads / size, at least 1)
  int64_t num_kv_blocks = 0;      // KV blocks of every rank's cache (the same block ids on every rank)
  int64_t block_size = 16;
  DType kv_dtype = DType::kF32;
  // How long a rank waits in a collective for a rank that neither arrives nor fails.
  std::chrono::milliseconds collective_timeout = std::chrono::minutes(5);
};

class TensorParallelRunner final : public StepExecutor {
 public:
  // Rank r's weights: `load(backend, shard)` on rank r's thread (shard = {r, size}), e.g.
  // load_weights with the shard. `config` is the whole model's.
  using WeightLoader = std::function<ModelWeights(Backend& backend, const TensorParallelShard& shard)>;

  TensorParallelRunner(const ModelConfig& config, const WeightLoader& load, const TensorParallelOptions& tp,
                       const RunnerOptions& runner, std::function<void(const std::string&)> log = {});
  ~TensorParallelRunner() override;

  // ModelRunner::capture_graphs on every rank at once (capture runs a step's collectives eagerly).
  void capture_graphs(const std::function<void(size_t, size_t)>& on_progress = {});

  StepResult execute(const std::vector<ScheduledRequest>& requests) override { return execute(requests, {}); }
  // `fill_masks` runs once, on the calling thread, before the ranks start: the CPU backend does not
  // run behind the host, so there is no launch to overlap.
  StepResult execute(const std::vector<ScheduledRequest>& requests, const std::function<void()>& fill_masks) override;
  StepResult execute_eager(const std::vector<ScheduledRequest>& requests, const std::function<void()>& fill_masks = {});
  std::vector<TokenLogprobs> prompt_logprobs(std::span<const int32_t> tokens, int64_t first, int64_t last,
                                             std::span<const int32_t> block_ids, int32_t k) override;

  int size() const { return static_cast<int>(ranks_.size()); }
  // Rank r's parts, for tests and start-up reports.
  ModelRunner& runner(int r) { return *ranks_.at(r).runner; }
  LlamaModel& model(int r) { return *ranks_.at(r).model; }
  const KvCache& kv(int r) const { return ranks_.at(r).kv; }
  CpuBackend& backend(int r) { return *ranks_.at(r).backend; }
  const ModelConfig& rank_config() const { return ranks_.front().model->config(); }
  const RunnerStats& stats() const { return ranks_.front().runner->stats(); }

 private:
  struct Rank {
    std::unique_ptr<CpuBackend> backend;
    std::unique_ptr<LlamaModel> model;
    KvCache kv;
    std::unique_ptr<ModelRunner> runner;
  };

  // Runs work(r) for every rank r, rank 0 on the calling thread; throws the first failure.
  void on_every_rank(const std::function<void(int)>& work);
  // Rank 0's step result, after checking every rank sampled the same ids.
  StepResult agreed(std::vector<StepResult>& results) const;

  std::unique_ptr<CpuCommunicatorGroup> group_;
  std::vector<Rank> ranks_;
};

}  // namespace fg
