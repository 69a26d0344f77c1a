// cli/tensor_parallel_setup.h — --tensor-parallel-size N for the commands that build a model
// (serve, generate, chat, perplexity, bench latency): which models and devices it runs, and the
// tensor-parallel runner over the model the options name (runner/tensor_parallel_runner.h).
//
// For now the ranks are threads of this process on the CPU backend. The CUDA backend's NCCL
// communicator is not built yet, so --device cuda refuses N > 1 before any GPU is touched; GGUF
// files and FP8 models are refused by name (their loaders do not shard).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "cli/engine_setup.h"
#include "cli/model_source.h"
#include "runner/tensor_parallel_runner.h"

namespace fg::cli {

// The whole model's config, where it comes from, and how rank r reads its shard of the weights.
struct TensorParallelModel {
  ModelConfig config;
  std::string source;
  TensorParallelRunner::WeightLoader load;
};

// Checks that --tensor-parallel-size N (> 1) can run with the other options, naming what cannot.
void check_tensor_parallel_options(const EngineSetupOptions& o);

// The model of the options (--model's folder, --shape, or the built-in model), with its loader.
TensorParallelModel tensor_parallel_model(const EngineSetupOptions& o, const ModelSource& files);

// The runner of N ranks over `model`, `num_blocks` KV blocks each; its graphs captured unless
// options.enforce_eager.
std::unique_ptr<TensorParallelRunner> build_tensor_parallel_runner(const EngineSetupOptions& o,
                                                                   const TensorParallelModel& model, int64_t num_blocks,
                                                                   DType kv_dtype, const RunnerOptions& options,
                                                                   const std::function<void(const std::string&)>& log);

}  // namespace fg::cli
