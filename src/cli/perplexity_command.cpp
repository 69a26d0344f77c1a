// cli/perplexity_command.cpp — `fullgraph perplexity` (see perplexity_command.h): reads the input,
// cuts it into chunks (cli/perplexity.h), submits every chunk at once as a request asking for its
// prompt logprobs and one greedy token (the least the engine generates), steps the engine until
// all are done, printing llama-perplexity's running estimate as each leading run of chunks
// completes, then the final estimate, the counts and the throughput, and optionally a JSON record.
//
// The scores are the engine's prompt logprobs (runner/prompt_logprobs.cpp): the fp32 log-softmax
// of the fp32 logits row, computed as sampling_params.h item 4 defines it and reported as a float,
// so each NLL carries a few float ulps (~1e-7 relative) before it is summed here in double.
// Requests with prompt logprobs skip the prefix cache (every position must be computed), so a
// text that repeats itself scores the same as one that does not.
#include "cli/perplexity_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/engine_setup.h"
#include "cli/perplexity.h"
#include "core/log.h"

namespace fg::cli {

namespace {

struct PerplexityOptions {
  EngineSetupOptions engine;
  std::string text_file;       // --text
  std::string token_ids_file;  // --token-ids
  int64_t context = 512;
  int64_t chunks = 0;  // 0: all
  std::string json_file;
};

std::string read_file(const std::string& path, const std::string& option) {
  std::ifstream in(path, std::ios::binary);
  FG_CHECK(in.good(), "{}: cannot read {}", option, path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The token the tokenizer puts before a text when asked for special tokens (BOS), if it puts
// exactly one there: llama.cpp's add_bos. A post-processor that adds nothing in front (SmolLM2,
// Qwen) gives none.
std::optional<int32_t> leading_bos(const Tokenizer& tokenizer) {
  const std::vector<int32_t> plain = tokenizer.encode("a", false), with = tokenizer.encode("a", true);
  if (with.size() < plain.size() + 1 || !std::equal(plain.begin(), plain.end(), with.begin() + 1)) return std::nullopt;
  return with[0];
}

struct Input {
  std::vector<int32_t> tokens;
  std::optional<int32_t> bos;  // each chunk's first token becomes this
};

Input read_input(const PerplexityOptions& o, const EngineSetup& setup) {
  Input input;
  if (setup.tokenizer) input.bos = leading_bos(*setup.tokenizer);
  if (!o.text_file.empty()) {
    FG_CHECK(setup.tokenizer != nullptr, "--text needs a tokenizer, and {} has none: give --token-ids FILE or --tokenizer",
             setup.source);
    // A BOS at the very start only if the tokenizer adds one (llama-perplexity's add_bos).
    input.tokens = setup.tokenizer->encode(read_file(o.text_file, "--text"), input.bos.has_value());
    return input;
  }
  input.tokens = parse_token_id_list(read_file(o.token_ids_file, "--token-ids"), "--token-ids " + o.token_ids_file);
  for (size_t i = 0; i < input.tokens.size(); ++i)
    FG_CHECK(input.tokens[i] < setup.config.vocab_size, "--token-ids: id {} (item {}) is outside the vocabulary of {}",
             input.tokens[i], i, setup.config.vocab_size);
  return input;
}

// The longest context the engine can score: the model's positions, and room in --max-model-len
// for the one token each request must generate.
void check_context(int64_t context, const EngineSetup& setup) {
  const int64_t positions = setup.config.max_position_embeddings;
  FG_CHECK(context <= positions, "--context {} is longer than the model's context length {} (max_position_embeddings)",
           context, positions);
  FG_CHECK(context + 1 <= setup.max_model_len,
           "--context {} leaves no room in the engine's context length {} for the one token each chunk's request "
           "generates: use --context {} or less{}",
           context, setup.max_model_len, setup.max_model_len - 1,
           setup.max_model_len < positions ? " or a larger --max-model-len" : "");
}

struct ChunkRun {
  std::vector<float> logprobs;  // the engine's prompt logprobs: entry j scores token j + 1
  bool done = false;
};

void write_json(const std::string& path, const PerplexityPlan& plan, int64_t n_tokens,
                const std::vector<ChunkScore>& scores, const PerplexityEstimate& e) {
  nlohmann::ordered_json chunks = nlohmann::ordered_json::array();
  for (const ChunkScore& c : scores) chunks.push_back({{"nll_sum", c.nll_sum}, {"n_scored", c.n_scored}});
  const nlohmann::ordered_json out = {{"ppl", e.ppl},           {"ppl_error", e.ppl_error}, {"nll_mean", e.nll_mean},
                                      {"n_scored", e.n_scored}, {"context", plan.context},  {"n_tokens", n_tokens},
                                      {"chunks", chunks}};
  std::ofstream file(path);
  FG_CHECK(file.good(), "--json: cannot write {}", path);
  file << out.dump(2) << '\n';  // nlohmann writes doubles with the digits that read back exactly
  FG_CHECK(file.good(), "--json: writing {} failed", path);
}

void run_perplexity(const PerplexityOptions& o, const GpuBackendFactory& gpu) {
  FG_CHECK(o.text_file.empty() != o.token_ids_file.empty(), "give exactly one of --text FILE and --token-ids FILE");
  FG_CHECK(o.context >= 2, "--context {}: a chunk needs at least 2 tokens (one to predict from, one to score)",
           o.context);
  std::unique_ptr<EngineSetup> setup = build_engine(o.engine, gpu, log::info_line);
  const Input input = read_input(o, *setup);
  const int64_t n_tokens = static_cast<int64_t>(input.tokens.size());
  check_context(o.context, *setup);
  const PerplexityPlan plan = plan_perplexity(n_tokens, o.context, o.chunks);
  log::info("perplexity: {} tokens, {} chunks of {} ({} scored each, after {} of context){}", n_tokens, plan.n_chunks,
            plan.context, plan.scored_per_chunk(), plan.first, input.bos ? ", each starting with BOS" : "");

  Engine& engine = *setup->engine;
  std::vector<ChunkRun> runs(static_cast<size_t>(plan.n_chunks));
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < plan.n_chunks; ++i) {
    ChunkRun* run = &runs[static_cast<size_t>(i)];
    RequestSpec spec;
    spec.prompt = chunk_tokens(input.tokens, plan, i, input.bos);
    spec.sampling.temperature = 0.0f;  // the one generated token is not used: greedy is cheapest
    spec.stop.max_tokens = 1;
    spec.stop.ignore_eos = true;
    spec.prompt_logprobs = 0;  // each prompt token's own logprob, no top list
    spec.on_output = [run](const RequestOutput& d) {
      for (const TokenLogprobs& t : d.prompt_logprobs) run->logprobs.push_back(t.logprob);
      if (d.finished) run->done = true;
    };
    try {
      engine.submit(std::move(spec));
    } catch (const Error& e) {
      fail("perplexity chunk {}: {}", i + 1, e.what());
    }
  }

  // Running estimates over the leading chunks that are done, as llama-perplexity prints them.
  std::vector<ChunkScore> scores;
  const auto report_done = [&] {
    while (scores.size() < runs.size() && runs[scores.size()].done) {
      const ChunkRun& run = runs[scores.size()];
      FG_CHECK(static_cast<int64_t>(run.logprobs.size()) == plan.context - 1 && run.logprobs.size() > 0,
               "perplexity chunk {}: the engine returned {} prompt logprobs for {} tokens", scores.size() + 1,
               run.logprobs.size(), plan.context);
      scores.push_back(score_chunk(run.logprobs, plan));
      fmt::print("[{}]{:.4f},", scores.size(), estimate_perplexity(scores).ppl);
      std::fflush(stdout);
    }
  };
  while (engine.step()) report_done();
  report_done();
  FG_CHECK(scores.size() == runs.size(), "perplexity: the engine stopped with {} of {} chunks done", scores.size(),
           runs.size());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const PerplexityEstimate e = estimate_perplexity(scores);
  fmt::print("\nFinal estimate: PPL = {:.4f} +/- {:.5f}\n", e.ppl, e.ppl_error);
  std::fflush(stdout);

  const EngineStats stats = engine.stats();
  const int64_t evaluated = plan.n_chunks * plan.context;
  log::info("perplexity: {} tokens scored in {} chunks of {} ({} tokens evaluated) in {:.2f} s: {:.1f} tok/s "
            "evaluated; {} steps, mean batch {:.1f} requests, {} preemptions",
            e.n_scored, plan.n_chunks, plan.context, evaluated, seconds, evaluated / seconds, stats.steps,
            stats.steps ? double(stats.scheduled_requests) / stats.steps : 0.0, engine.num_preemptions());
  if (!o.json_file.empty()) write_json(o.json_file, plan, n_tokens, scores, e);
}

}  // namespace

void add_perplexity_command(CLI::App& app, GpuBackendFactory gpu) {
  auto options = std::make_shared<PerplexityOptions>();
  CLI::App* cmd = app.add_subcommand(
      "perplexity",
      "Perplexity over a text as llama.cpp's llama-perplexity computes it: the tokens in chunks of --context, each "
      "scored on its second half, every chunk a concurrent request of the engine");
  cmd->add_option("--text", options->text_file, "The text file to score (tokenized whole, with BOS if the tokenizer adds one)");
  cmd->add_option("--token-ids", options->token_ids_file,
                  "Instead of --text: a file of token ids separated by commas and/or whitespace, chunked as --text's "
                  "tokens are (each chunk's first id becomes BOS when the model's tokenizer adds one)");
  cmd->add_option("--context", options->context, "Tokens per chunk (N); the last N - 1 - N/2 of each are scored")
      ->capture_default_str();
  cmd->add_option("--chunks", options->chunks, "Score only the first K chunks (0 = all)")->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--json", options->json_file,
                  "Write the result here: ppl, ppl_error, nll_mean, n_scored, context, n_tokens, and per chunk "
                  "nll_sum and n_scored");
  add_engine_options(*cmd, options->engine);
  cmd->callback([options, gpu] { run_perplexity(*options, gpu); });
}

}  // namespace fg::cli
