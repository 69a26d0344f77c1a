// cli/tensor_parallel_setup.cpp — the checks and the runner of --tensor-parallel-size.
#include "cli/tensor_parallel_setup.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/progress_bar.h"
#include "model/model_loader.h"
#include "model/model_path.h"
#include "model/named_shapes.h"
#include "model/safetensors.h"
#include "model/weights.h"

namespace fg::cli {

void check_tensor_parallel_options(const EngineSetupOptions& o) {
  const int n = o.tensor_parallel_size;
  FG_CHECK(n >= 1, "--tensor-parallel-size must be at least 1, got {}", n);
  if (n == 1) return;
  FG_CHECK(o.device == "cpu",
           "--tensor-parallel-size {} with --device {}: the CUDA backend's NCCL communicator is not built yet; tensor "
           "parallelism runs on --device cpu for now (the ranks as threads of one process)",
           n, o.device);
  FG_CHECK(o.quantization.empty(), "--tensor-parallel-size {} with --quantization {}: FP8 models are not sharded yet",
           n, o.quantization);
}

TensorParallelModel tensor_parallel_model(const EngineSetupOptions& o, const ModelSource& files) {
  check_tensor_parallel_options(o);
  TensorParallelModel m;
  const uint64_t seed = 0;  // the seed load_model's dummy weights use
  const auto dummy = [&](const ModelConfig& config) {
    return [config, seed](Backend& backend, const TensorParallelShard& shard) {
      return dummy_weights(config, backend, seed, shard);
    };
  };
  if (!o.shape.empty()) {
    m.config = named_model_config(o.shape);
    m.source = o.shape + " (dummy weights)";
    m.load = dummy(m.config);
    return m;
  }
  if (files.model_dir.empty()) {
    m.config = parse_model_config(builtin_model_config_json(), "built-in default config.json");
    m.config.rope.round_inv_freq_to_bf16 = o.rope_bf16;
    m.source = "built-in default";
    m.load = dummy(m.config);
    return m;
  }
  FG_CHECK(!is_gguf_file(files.model_dir),
           "--tensor-parallel-size {}: {} is a GGUF file, whose loader does not shard; give a safetensors checkpoint "
           "folder", o.tensor_parallel_size, files.model_dir);
  m.config = load_model_config((std::filesystem::path(files.model_dir) / "config.json").string());
  m.config.rope.round_inv_freq_to_bf16 = o.rope_bf16;
  m.source = files.model_dir;
  FG_CHECK(!m.config.quantization, "--tensor-parallel-size {}: {} is an FP8 checkpoint ({}), and FP8 models are not "
           "sharded yet", o.tensor_parallel_size, files.model_dir, m.config.quantization ? m.config.quantization->method : "");
  if (parse_load_format(o.load_format) == LoadFormat::kDummy) {
    m.load = dummy(m.config);
    return m;
  }
  auto checkpoint = std::make_shared<const Checkpoint>(Checkpoint::open(files.model_dir));
  m.load = [config = m.config, checkpoint](Backend& backend, const TensorParallelShard& shard) {
    return load_weights(config, checkpoint, backend, shard);
  };
  return m;
}

std::unique_ptr<TensorParallelRunner> build_tensor_parallel_runner(const EngineSetupOptions& o,
                                                                   const TensorParallelModel& model, int64_t num_blocks,
                                                                   DType kv_dtype, const RunnerOptions& options,
                                                                   const std::function<void(const std::string&)>& log) {
  TensorParallelOptions tp;
  tp.size = o.tensor_parallel_size;
  tp.threads_per_rank = o.threads > 0 ? std::max(1, o.threads / o.tensor_parallel_size) : 0;
  tp.num_kv_blocks = num_blocks;
  tp.block_size = o.block_size;
  tp.kv_dtype = kv_dtype;
  auto runner = std::make_unique<TensorParallelRunner>(model.config, model.load, tp, options, log);
  const ModelConfig& c = runner->rank_config();
  log(fmt::format("tensor parallel: {} ranks (threads of this process, {} CPU threads each), each with {} of {} query "
                  "heads, {} KV heads{}, {} of {} MLP features and {} of {} vocabulary rows",
                  tp.size, runner->backend(0).num_threads(), c.num_heads, model.config.num_heads, c.num_kv_heads,
                  model.config.num_kv_heads < tp.size ? " (replicated)" : "", c.intermediate_size,
                  model.config.intermediate_size, model.config.vocab_size / tp.size, model.config.vocab_size));
  ProgressBar bar("capturing graphs", 0, o.progress);
  runner->capture_graphs([&bar](size_t done, size_t total) { bar.update(done, "", total); });
  return runner;
}

}  // namespace fg::cli
