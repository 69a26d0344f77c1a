// bench/latency/constrained_requests.cpp — see constrained_requests.h.
#include "bench/latency/constrained_requests.h"

#include <fstream>
#include <sstream>

#include "bench/common/clock.h"
#include "core/error.h"
#include "grammar/grammar_vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace fg::bench {

StructuredOutput json_schema_file(const std::string& path) {
  std::ifstream in(path);
  FG_CHECK(in.good(), "--json-schema: cannot read {}", path);
  std::stringstream text;
  text << in.rdbuf();
  StructuredOutput schema;
  schema.kind = StructuredOutputKind::kJsonSchema;
  schema.text = text.str();
  schema.source = "--json-schema";
  return schema;
}

ConstrainedRequests::ConstrainedRequests(const std::string& tokenizer_dir, const std::string& schema_path,
                                         int64_t vocab_size, const std::vector<int32_t>& eos_token_ids,
                                         int64_t count, int threads)
    : filler_(threads) {
  const StructuredOutput schema = json_schema_file(schema_path);
  schema_bytes_ = static_cast<int64_t>(schema.text.size());

  const Tokenizer tokenizer = Tokenizer::from_file(tokenizer_dir + "/tokenizer.json");
  double start = monotonic_seconds();
  const GrammarVocabulary vocabulary = grammar_vocabulary(tokenizer, vocab_size, eos_token_ids);
  compiler_ = std::make_unique<GrammarCompiler>(vocabulary);
  vocabulary_ms_ = (monotonic_seconds() - start) * 1e3;
  start = monotonic_seconds();
  const auto compiled = compiler_->compile(schema);
  compile_ms_ = (monotonic_seconds() - start) * 1e3;
  for (int64_t i = 0; i < count; ++i) matchers_.emplace_back(compiled);
  masks_.resize(static_cast<size_t>(count));
}

void ConstrainedRequests::before(std::vector<ScheduledRequest>& step) {
  FG_CHECK(step.size() <= matchers_.size(), "bench latency: {} requests, {} matchers", step.size(), matchers_.size());
  std::vector<GrammarMatcher*> matchers;
  std::vector<std::vector<int32_t>*> rows;
  for (size_t i = 0; i < step.size(); ++i) {
    matchers.push_back(&matchers_[i]);
    rows.push_back(&masks_[i]);
  }
  filler_.fill(matchers, rows);
  for (size_t i = 0; i < step.size(); ++i) step[i].token_mask = masks_[i];
}

void ConstrainedRequests::after(const StepResult& result) {
  for (size_t i = 0; i < result.sampled.size() && i < matchers_.size(); ++i) {
    GrammarMatcher& m = matchers_[i];
    FG_CHECK(m.accept_token(result.sampled[i]), "bench latency: request {} sampled {} outside its mask", i,
             result.sampled[i]);
    if (m.is_terminated()) m.reset();
  }
}

}  // namespace fg::bench
