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
  pending_.assign(static_cast<size_t>(count), -1);
}

std::function<void()> ConstrainedRequests::before(std::vector<ScheduledRequest>& step) {
  FG_CHECK(step.size() <= matchers_.size(), "bench latency: {} requests, {} matchers", step.size(), matchers_.size());
  std::vector<MaskFill> fills;
  for (size_t i = 0; i < step.size(); ++i) {
    masks_[i].resize(static_cast<size_t>(bitmask_words(matchers_[i].vocab_size())));
    step[i].token_mask = masks_[i];
    fills.push_back({&matchers_[i], &pending_[i], &masks_[i]});
  }
  return [this, fills = std::move(fills)] {
    const double start = monotonic_seconds();
    filler_.fill(fills);
    times_.fill_ms += (monotonic_seconds() - start) * 1e3;
  };
}

void ConstrainedRequests::after(const StepResult& result) {
  // As the engine does: a stop token ends the document (the matcher starts over), any other
  // token the matcher takes in the next fill.
  const double start = monotonic_seconds();
  for (size_t i = 0; i < result.sampled.size() && i < matchers_.size(); ++i) {
    const int32_t token = result.sampled[i];
    const auto word = static_cast<size_t>(token >> 5);
    FG_CHECK(token >= 0 && word < masks_[i].size() && ((static_cast<uint32_t>(masks_[i][word]) >> (token & 31)) & 1u),
             "bench latency: request {} sampled {} outside its mask", i, token);
    if (matchers_[i].is_stop_token(token)) {
      matchers_[i].reset();
    } else {
      pending_[i] = token;
    }
  }
  times_.accept_ms += (monotonic_seconds() - start) * 1e3;
  ++times_.steps;
}

}  // namespace fg::bench
