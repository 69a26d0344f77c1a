// engine/step_executor.h — what the engine needs from whatever runs a step: the scheduled
// requests in, one sampled token (and logprobs when asked) per request out. The full-graph
// ModelRunner is the real one; tests substitute executors that model a KV cache without a model.
#pragma once

#include <vector>

#include "runner/model_runner.h"

namespace fg {

class StepExecutor {
 public:
  virtual ~StepExecutor() = default;
  virtual StepResult execute(const std::vector<ScheduledRequest>& requests) = 0;
};

class RunnerExecutor final : public StepExecutor {
 public:
  explicit RunnerExecutor(ModelRunner& runner) : runner_(runner) {}
  StepResult execute(const std::vector<ScheduledRequest>& requests) override { return runner_.execute(requests); }

 private:
  ModelRunner& runner_;
};

}  // namespace fg
