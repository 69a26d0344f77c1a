// runner/tensor_parallel_runner.cpp — building the ranks and running each step on N threads.
#include "runner/tensor_parallel_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <thread>

namespace fg {

TensorParallelRunner::TensorParallelRunner(const ModelConfig& config, const WeightLoader& load,
                                           const TensorParallelOptions& tp, const RunnerOptions& runner,
                                           std::function<void(const std::string&)> log) {
  FG_CHECK(tp.size >= 1, "--tensor-parallel-size must be at least 1, got {}", tp.size);
  const ModelConfig rank_config = shard_config(config, {0, tp.size});  // refuses sizes that do not divide
  group_ = std::make_unique<CpuCommunicatorGroup>(tp.size, tp.collective_timeout);
  const int threads = tp.threads_per_rank > 0
                          ? tp.threads_per_rank
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / tp.size);
  ranks_.resize(static_cast<size_t>(tp.size));
  for (int r = 0; r < tp.size; ++r) {
    ranks_[r].backend = std::make_unique<CpuBackend>(threads);
    ranks_[r].backend->set_communicator(group_->communicator(r));
  }
  // Loading needs no collective: the ranks read their shards side by side.
  on_every_rank([&](int r) {
    Rank& rank = ranks_[r];
    ModelWeights weights = load(*rank.backend, {r, tp.size});
    rank.model = std::make_unique<LlamaModel>(rank_config, std::move(weights), *rank.backend, runner.max_num_tokens,
                                              runner.max_num_seqs, tp.size);
    rank.kv = allocate_kv_cache(*rank.backend, rank_config, tp.num_kv_blocks, tp.block_size, tp.kv_dtype);
    // Rank 0 speaks for the group; the others' lines would repeat it.
    const std::function<void(const std::string&)> rank_log =
        r == 0 ? log : std::function<void(const std::string&)>([](const std::string&) {});
    rank.runner = std::make_unique<ModelRunner>(*rank.model, rank.kv, runner, rank_log);
  });
}

TensorParallelRunner::~TensorParallelRunner() = default;

void TensorParallelRunner::on_every_rank(const std::function<void(int)>& work) {
  const int n = size();
  // A failed step may have stopped ranks anywhere in their forward (KV writes, token-mask
  // publications half done): the ranks are no longer in step, so nothing more runs.
  const std::string earlier = group_->failure();
  FG_CHECK(earlier.empty(), "tensor parallelism over {} ranks: the group failed at an earlier step: {}", n, earlier);
  std::vector<uint8_t> failed(static_cast<size_t>(n), 0);  // one byte per rank: each thread writes its own
  const auto body = [&](int r) {
    try {
      work(r);
    } catch (const std::exception& e) {
      failed[r] = 1;
      group_->abort(r, e.what());  // the others stop at their next collective
    } catch (...) {
      failed[r] = 1;
      group_->abort(r, "an exception that is not a std::exception");
    }
  };
  {
    std::vector<std::jthread> others;
    for (int r = 1; r < n; ++r) others.emplace_back(body, r);
    body(0);
  }  // joined: no rank is inside a collective any more
  if (std::none_of(failed.begin(), failed.end(), [](uint8_t f) { return f != 0; })) return;
  fail("tensor parallelism over {} ranks: {}", n, group_->failure());
}

StepResult TensorParallelRunner::agreed(std::vector<StepResult>& results) const {
  for (size_t r = 1; r < results.size(); ++r)
    FG_CHECK(results[r].sampled == results[0].sampled,
             "tensor parallelism: rank {} sampled other ids than rank 0 (their logits differ: a bug)", r);
  return std::move(results[0]);
}

StepResult TensorParallelRunner::execute(const std::vector<ScheduledRequest>& requests,
                                         const std::function<void()>& fill_masks) {
  if (fill_masks) fill_masks();
  std::vector<StepResult> results(ranks_.size());
  on_every_rank([&](int r) { results[r] = ranks_[r].runner->execute(requests); });
  return agreed(results);
}

StepResult TensorParallelRunner::execute_eager(const std::vector<ScheduledRequest>& requests,
                                               const std::function<void()>& fill_masks) {
  if (fill_masks) fill_masks();
  std::vector<StepResult> results(ranks_.size());
  on_every_rank([&](int r) { results[r] = ranks_[r].runner->execute_eager(requests); });
  return agreed(results);
}

std::vector<TokenLogprobs> TensorParallelRunner::prompt_logprobs(std::span<const int32_t> tokens, int64_t first,
                                                                 int64_t last, std::span<const int32_t> block_ids,
                                                                 int32_t k) {
  std::vector<std::vector<TokenLogprobs>> results(ranks_.size());
  on_every_rank([&](int r) { results[r] = ranks_[r].runner->prompt_logprobs(tokens, first, last, block_ids, k); });
  return std::move(results[0]);
}

void TensorParallelRunner::capture_graphs(const std::function<void(size_t, size_t)>& on_progress) {
  on_every_rank([&](int r) {
    ranks_[r].runner->capture_graphs(r == 0 ? on_progress : std::function<void(size_t, size_t)>{});
  });
}

}  // namespace fg
