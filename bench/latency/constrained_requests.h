// bench/latency/constrained_requests.h — `bench latency --json-schema FILE --tokenizer DIR`: every
// request of a decode step constrained by one JSON schema, as the engine runs it: each request's
// grammar matcher fills its mask before the step (on the engine's StepMaskFiller pool), the step
// copies and applies the masks, and each matcher then takes the token its request sampled (a
// matcher whose document is complete starts over). A step's time so includes the whole cost of a
// constraint: the masks' fill, their copy and their application.
#pragma once

#include <cstdint>
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

  // Before a step of the first step.size() requests: fills their masks, points each at its own.
  void before(std::vector<ScheduledRequest>& step);
  // After it: each matcher takes its request's sampled token.
  void after(const StepResult& result);

 private:
  std::unique_ptr<GrammarCompiler> compiler_;
  std::vector<GrammarMatcher> matchers_;
  std::vector<std::vector<int32_t>> masks_;
  StepMaskFiller filler_;
  double vocabulary_ms_ = 0, compile_ms_ = 0;
  int64_t schema_bytes_ = 0;
};

}  // namespace fg::bench
