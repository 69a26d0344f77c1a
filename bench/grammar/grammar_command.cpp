// bench/grammar/grammar_command.cpp — see grammar_command.h.
#include "bench/grammar/grammar_command.h"

#include <fmt/format.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/common/clock.h"
#include "bench/common/stats.h"
#include "bench/latency/constrained_requests.h"
#include "core/error.h"
#include "grammar/grammar_compiler.h"
#include "grammar/grammar_matcher.h"
#include "grammar/grammar_vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace fg::bench {

namespace {

struct GrammarBenchOptions {
  std::string tokenizer, json_schema = "bench/grammar/large_schema.json";
  int64_t vocab_size = 0;  // 0: the tokenizer's
  std::vector<int32_t> eos_token_ids;
  int compiles = 3;
  int64_t tokens = 200;
  int threads = 2;
};

// The allowed ids of a mask row.
std::vector<int32_t> allowed(const std::vector<int32_t>& row, int64_t vocab) {
  std::vector<int32_t> ids;
  for (int64_t id = 0; id < vocab; ++id)
    if ((row[static_cast<size_t>(id / 32)] >> (id % 32)) & 1) ids.push_back(static_cast<int32_t>(id));
  return ids;
}

void run_grammar_bench(const GrammarBenchOptions& o) {
  const StructuredOutput schema = json_schema_file(o.json_schema);
  const Tokenizer tokenizer = Tokenizer::from_file(o.tokenizer + "/tokenizer.json");
  const int64_t vocab = o.vocab_size > 0 ? o.vocab_size : tokenizer.vocab_size();
  double start = monotonic_seconds();
  const GrammarVocabulary vocabulary = grammar_vocabulary(tokenizer, vocab, o.eos_token_ids);
  const double vocabulary_ms = (monotonic_seconds() - start) * 1e3;
  std::vector<double> compile_ms;
  std::shared_ptr<const CompiledGrammar> compiled;
  for (int i = 0; i < o.compiles; ++i) {
    GrammarCompiler compiler(vocabulary, {.threads = o.threads, .cache_bytes = 0});  // a cold compile each time
    start = monotonic_seconds();
    compiled = compiler.compile(schema);
    compile_ms.push_back((monotonic_seconds() - start) * 1e3);
  }
  // A random walk: each step fills the mask and takes a random allowed token (both timed).
  GrammarMatcher matcher(compiled);
  std::vector<int32_t> row(static_cast<size_t>(bitmask_words(vocab)));
  std::vector<double> fill_us, accept_us;
  std::mt19937 rng(1);
  for (int64_t t = 0; t < o.tokens; ++t) {
    if (matcher.is_terminated()) matcher.reset();
    start = monotonic_seconds();
    matcher.fill_next_token_bitmask(row.data());
    fill_us.push_back((monotonic_seconds() - start) * 1e6);
    const std::vector<int32_t> ids = allowed(row, vocab);
    FG_CHECK(!ids.empty(), "bench grammar: a mask allows no token");
    const int32_t token = ids[std::uniform_int_distribution<size_t>(0, ids.size() - 1)(rng)];
    start = monotonic_seconds();
    const bool accepted = matcher.accept_token(token);
    accept_us.push_back((monotonic_seconds() - start) * 1e6);
    FG_CHECK(accepted, "bench grammar: the matcher refused a token its mask allowed");
  }
  std::string compiles;
  for (double ms : compile_ms) compiles += fmt::format("{}{:.0f}", compiles.empty() ? "" : ", ", ms);
  fmt::print("bench grammar: {} ({} tokens of the model's {}), schema {} ({} bytes), {} compiler threads\n",
             o.tokenizer, tokenizer.vocab_size(), vocab, o.json_schema, schema.text.size(), o.threads);
  fmt::print("  grammar vocabulary: {:.0f} ms\n", vocabulary_ms);
  fmt::print("  compile (cold, {}x): {} ms\n", o.compiles, compiles);
  fmt::print("  mask fill over {} tokens of a random walk: median {:.1f} us, p90 {:.1f} us, max {:.1f} us\n", o.tokens,
             percentile(fill_us, 50), percentile(fill_us, 90), percentile(fill_us, 100));
  fmt::print("  token accepted by the matcher: median {:.1f} us, p90 {:.1f} us, max {:.1f} us\n",
             percentile(accept_us, 50), percentile(accept_us, 90), percentile(accept_us, 100));
}

}  // namespace

void add_grammar_command(CLI::App& bench) {
  auto o = std::make_shared<GrammarBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "grammar", "Structured outputs on the CPU: grammar vocabulary, JSON-schema compile time, mask fill per token");
  cmd->add_option("--tokenizer", o->tokenizer, "A folder with tokenizer.json")->required();
  cmd->add_option("--json-schema", o->json_schema, "The schema to compile")->capture_default_str();
  cmd->add_option("--vocab-size", o->vocab_size, "The model's logits width (default: the tokenizer's)");
  cmd->add_option("--eos-token-ids", o->eos_token_ids, "The ids that end a generation")->delimiter(',')->required();
  cmd->add_option("--compiles", o->compiles, "Cold compiles to time")->capture_default_str();
  cmd->add_option("--tokens", o->tokens, "Mask fills to time along a random walk")->capture_default_str();
  cmd->add_option("--threads", o->threads, "The compiler's threads (the server's default: 2)")->capture_default_str();
  cmd->callback([o] { run_grammar_bench(*o); });
}

}  // namespace fg::bench
