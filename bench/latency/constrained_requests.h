// bench/latency/constrained_requests.h — `bench latency --json-schema FILE --tokenizer DIR`: every
// request of a decode step constrained by one JSON schema, as the engine runs it: each request's
// grammar matcher fills its mask (on the engine's StepMaskFiller pool) when the runner asks, while
// the step's forward runs on a GPU, the step copies and applies the masks, and each matcher takes
// the token its request sampled at the start of the next fill (a stop token starts it over). A step's
// time so includes the whole cost of a constraint: the masks' fill where it is not hidden behind the
// forward, their copy and their application.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/step_masks.h"
#include "grammar/grammar_compiler.h"
#include "runner/step_io.h"

namespace fg::bench {

// The JSON schema in the file at `path`, as a constraint (fg::Error when it cannot be read).
StructuredOutput json_schema_file(const std::string& path);

class ConstrainedRequests {
 public:
  // `count` matchers of the schema in `schema_path` over the tokenizer in `tokenizer_dir`, for a
  // model of `vocab_size` logits whose generations end with `eos_token_ids`.
  ConstrainedRequests(const std::string& tokenizer_dir, const std::string& schema_path, int64_t vocab_size,
                      const std::vector<int32_t>& eos_token_ids, int64_t count, int threads);

  double vocabulary_ms() const { return vocabulary_ms_; }  // building the grammar vocabulary
  double compile_ms() const { return compile_ms_; }        // compiling the schema, once
  int64_t schema_bytes() const { return schema_bytes_; }

  // Before a step of the first step.size() requests: points each at its own mask row and returns
  // what fills those rows (ModelRunner::execute's fill_masks).
  std::function<void()> before(std::vector<ScheduledRequest>& step);
  // After it: each request's sampled token, checked against its mask, for its matcher to take in
  // the next fill (a stop token starts the matcher over).
  void after(const StepResult& result);

  // Host time of the masks' fill (while the forward runs, on a GPU) and of the matchers taking
  // their tokens (after the step), summed since the last reset: where a json row's time goes.
  struct HostTimes {
    double fill_ms = 0, accept_ms = 0;  // accept: the sampled tokens checked and set pending
    int64_t steps = 0;
  };
  const HostTimes& host_times() const { return times_; }
  void reset_host_times() { times_ = {}; }

 private:
  std::unique_ptr<GrammarCompiler> compiler_;
  std::vector<GrammarMatcher> matchers_;
  std::vector<std::vector<int32_t>> masks_;
  std::vector<int32_t> pending_;  // [count]: the sampled token each matcher takes in the next fill
  StepMaskFiller filler_;
  HostTimes times_;
  double vocabulary_ms_ = 0, compile_ms_ = 0;
  int64_t schema_bytes_ = 0;
};

}  // namespace fg::bench
