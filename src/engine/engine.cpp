// engine/engine.cpp — the engine loop: schedule, run, append, detokenize, stop, stream.
#include "engine/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/log.h"

namespace fg {

namespace {

// Bit `token` of a mask row (false outside it).
bool mask_allows(const std::vector<int32_t>& row, int32_t token) {
  const auto word = static_cast<size_t>(token >> 5);
  return token >= 0 && word < row.size() && ((static_cast<uint32_t>(row[word]) >> (token & 31)) & 1u) != 0;
}

}  // namespace

struct Engine::Request {
  SchedRequest sched;  // tokens = prompt + generated
  SamplingParams sampling;
  std::vector<std::pair<int32_t, float>> logit_bias;
  int32_t prompt_logprobs = -1;                 // RequestSpec::prompt_logprobs
  std::vector<TokenLogprobs> prompt_logprobs_out;  // scored so far; delivered with the first delta
  bool prompt_logprobs_sent = false;
  RequestOutputProcessor output;
  // A structured-output request: its place in the grammar, and the mask of its last sampled token
  // (until the next fill rewrites it).
  std::unique_ptr<GrammarMatcher> matcher;
  int32_t grammar_after = -1;  // the matcher starts after this token (RequestSpec::structured_output_after)
  // The token its last step sampled under the mask, which the matcher takes at the start of the
  // next fill, while the next step's forward runs, rather than here between steps (-1: none).
  int32_t grammar_pending = -1;
  std::vector<int32_t> mask;
  std::function<void(const RequestOutput&)> on_output;
  bool finished = false;
  // Not yet delivered:
  std::vector<int32_t> pending_ids;
  std::string pending_text;
  std::vector<OutputLogprobs> pending_logprobs;
  FinishReason finish_reason = FinishReason::kNone;
  std::optional<std::variant<int32_t, std::string>> stop_reason;

  Request(const Tokenizer* tokenizer, StopConditions stop) : output(tokenizer, std::move(stop)) {}
  int64_t num_generated() const { return static_cast<int64_t>(sched.tokens.size()) - sched.num_prompt_tokens; }
};

Engine::Engine(StepExecutor& executor, KvBlockManager& kv, const Tokenizer* tokenizer, EngineOptions options)
    : executor_(executor),
      kv_(kv),
      tokenizer_(tokenizer),
      options_(std::move(options)),
      scheduler_(options_.scheduler, kv),
      seed_generator_(options_.seed) {
  FG_CHECK(options_.vocab_size >= 1, "engine: vocab_size must be positive");
  FG_CHECK(options_.max_model_len >= 1, "engine: max_model_len must be positive");
  if (options_.grammar != nullptr) {
    FG_CHECK(options_.grammar->vocab_size() == options_.vocab_size,
             "engine: the grammar compiler's vocabulary ({}) is not the model's ({})", options_.grammar->vocab_size(),
             options_.vocab_size);
    masks_ = std::make_unique<StepMaskFiller>(options_.grammar_threads);
  }
}

Engine::~Engine() = default;

uint64_t Engine::submit(RequestSpec spec) {
  const int64_t prompt_len = static_cast<int64_t>(spec.prompt.size());
  FG_CHECK(prompt_len >= 1, "the prompt is empty");
  for (int64_t i = 0; i < prompt_len; ++i)
    FG_CHECK(spec.prompt[i] >= 0 && spec.prompt[i] < options_.vocab_size,
             "prompt token id {} at position {} is outside the vocabulary of {}", spec.prompt[i], i,
             options_.vocab_size);
  if (spec.stop.eos_token_ids.empty()) spec.stop.eos_token_ids = options_.eos_token_ids;
  validate_stop_conditions(spec.stop);
  FG_CHECK(spec.stop.stop.empty() || tokenizer_ != nullptr, "stop strings need a tokenizer");
  const int64_t max_tokens = spec.stop.max_tokens;
  FG_CHECK(prompt_len + max_tokens <= options_.max_model_len,
           "the prompt ({} tokens) plus max_tokens ({}) is {} tokens, more than the context length {}", prompt_len,
           max_tokens, prompt_len + max_tokens, options_.max_model_len);
  // The last generated token's KV is never computed.
  const int64_t kv_blocks = kv_.blocks_for(prompt_len + max_tokens - 1);
  FG_CHECK(kv_blocks <= kv_.num_usable_blocks(),
           "the request needs {} KV blocks of {} tokens ({} prompt + {} new tokens) but the cache holds {}; it could "
           "never run",
           kv_blocks, kv_.block_size(), prompt_len, max_tokens, kv_.num_usable_blocks());
  spec.sampling.step = 0;
  validate_sampling_params(spec.sampling, 0);
  validate_logit_bias(spec.logit_bias);
  std::unique_ptr<GrammarMatcher> matcher;
  if (spec.structured_output) {
    const StructuredOutput& constraint = *spec.structured_output;
    FG_CHECK(options_.grammar != nullptr, "'{}': structured outputs need the model's tokenizer, and this engine has none",
             constraint.source);
    try {
      matcher = std::make_unique<GrammarMatcher>(options_.grammar->compile(constraint));
    } catch (const Error& e) {
      FG_CHECK(false, "'{}': {}", constraint.source, e.what());
    }
  }

  auto request = std::make_shared<Request>(tokenizer_, std::move(spec.stop));
  request->matcher = std::move(matcher);
  request->grammar_after = spec.structured_output_after;
  std::vector<RequestOutput> none;
  {
    std::lock_guard lock(mutex_);
    if (!spec.has_seed) spec.sampling.seed = static_cast<int64_t>(seed_generator_());
    request->sampling = spec.sampling;
    request->logit_bias = std::move(spec.logit_bias);
    request->prompt_logprobs = spec.prompt_logprobs;
    request->sched.skip_prefix_cache = spec.prompt_logprobs >= 0;
    request->on_output = std::move(spec.on_output);
    request->sched.id = next_id_++;
    request->sched.arrival = next_arrival_++;
    request->sched.priority = spec.priority;
    request->sched.tokens = std::move(spec.prompt);
    request->sched.num_prompt_tokens = prompt_len;
    requests_.emplace(request->sched.id, request);
    scheduler_.add(&request->sched);
    stats_.prompt_tokens += prompt_len;
  }
  return request->sched.id;
}

void Engine::validate_logit_bias(const std::vector<std::pair<int32_t, float>>& bias) const {
  std::vector<int32_t> tokens;
  for (const auto& [token, value] : bias) {
    FG_CHECK(token >= 0 && token < options_.vocab_size, "logit_bias: token id {} is outside the vocabulary of {}",
             token, options_.vocab_size);
    FG_CHECK(std::isfinite(value) && std::fabs(value) <= kMaxAbsLogitBias,
             "logit_bias: the bias of token {} is {}; it must be in [-{}, {}]", token, value, kMaxAbsLogitBias,
             kMaxAbsLogitBias);
    tokens.push_back(token);
  }
  std::sort(tokens.begin(), tokens.end());
  const auto twice = std::adjacent_find(tokens.begin(), tokens.end());
  FG_CHECK(twice == tokens.end(), "logit_bias: token id {} is listed twice", twice == tokens.end() ? 0 : *twice);
}

bool Engine::cancel(uint64_t id) {
  std::shared_ptr<Request> request;
  RequestOutput output;
  {
    std::lock_guard lock(mutex_);
    auto it = requests_.find(id);
    if (it == requests_.end()) return false;
    request = it->second;
    request->finish_reason = FinishReason::kAbort;
    ++stats_.cancelled_requests;
    finish(*request);
    output = delta_of(*request);
  }
  if (request->on_output) request->on_output(output);
  return true;
}

void Engine::cancel_all() {
  std::vector<uint64_t> ids;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, request] : requests_) ids.push_back(id);
  }
  for (uint64_t id : ids) cancel(id);
}

void Engine::finish(Request& request) {
  request.finished = true;
  scheduler_.remove(&request.sched);  // frees the blocks now
  requests_.erase(request.sched.id);  // the caller (or the step in flight) still holds the object
}

RequestOutput Engine::delta_of(const Request& request) const {
  RequestOutput d;
  d.id = request.sched.id;
  d.token_ids = request.pending_ids;
  d.text = request.pending_text;
  d.logprobs = request.pending_logprobs;
  d.finished = request.finished;
  d.finish_reason = request.finish_reason;
  d.stop_reason = request.stop_reason;
  d.num_prompt_tokens = request.sched.num_prompt_tokens;
  d.num_generated_tokens = request.num_generated();
  d.num_cached_tokens = std::max<int64_t>(0, request.sched.num_cached_tokens);
  if (!request.prompt_logprobs_sent && request.prompt_logprobs >= 0) d.prompt_logprobs = request.prompt_logprobs_out;
  return d;
}

RequestOutput Engine::accept_token(Request& request, int32_t token, const TokenLogprobs* logprobs) {
  request.sched.tokens.push_back(token);
  ++stats_.generated_tokens;
  // A constrained request ends when its grammar is complete (an EOS its mask allowed, even under
  // ignore_eos or before min_tokens: nothing may follow). A token its mask does not allow can only
  // come from a mask that allowed nothing (the sampler then leaves the row unmasked): the request
  // ends with "abort" rather than continue outside its grammar. Any other token the mask allowed
  // the matcher takes (masks are exact) at the next fill, off the path between steps.
  std::optional<FinishReason> end_with;
  if (request.matcher && request.grammar_after >= 0) {
    if (token == request.grammar_after) request.grammar_after = -1;  // the grammar starts with the next token
  } else if (request.matcher) {
    if (!mask_allows(request.mask, token)) {
      log::warning("request {}: its grammar refuses the sampled token {}; ending it", request.sched.id, token);
      end_with = FinishReason::kAbort;
    } else if (request.matcher->is_stop_token(token)) {
      end_with = FinishReason::kStop;
    } else {
      request.grammar_pending = token;
    }
  }
  OutputDelta delta = request.output.push(token, logprobs, end_with);
  request.pending_ids.push_back(token);
  request.pending_text += delta.text;
  for (OutputLogprobs& entry : delta.logprobs) request.pending_logprobs.push_back(std::move(entry));
  if (delta.finished) {
    request.finish_reason = delta.reason;
    request.stop_reason = delta.stop_reason;
    ++stats_.finished_requests;
    finish(request);
  }
  RequestOutput output = delta_of(request);
  request.prompt_logprobs_sent = true;
  request.pending_ids.clear();
  request.pending_text.clear();
  request.pending_logprobs.clear();
  return output;
}

bool Engine::step() {
  SchedulerOutput plan;
  std::vector<std::shared_ptr<Request>> in_flight;  // [chunks]
  std::vector<std::vector<int32_t>> block_ids;      // [chunks][blocks]: copies, since cancel() frees
  std::vector<ScheduledRequest> scheduled;          // [chunks]
  std::vector<size_t> constrained;                  // chunks that sample under a grammar
  {
    std::lock_guard lock(mutex_);
    if (!scheduler_.has_work()) return false;
    plan = scheduler_.schedule();
    FG_CHECK(!plan.empty(), "engine: {} requests wait or run but none could be scheduled (KV cache of {} blocks)",
             scheduler_.num_waiting() + scheduler_.num_running(), kv_.num_usable_blocks());
    in_flight.reserve(plan.chunks.size());
    block_ids.reserve(plan.chunks.size());
    scheduled.reserve(plan.chunks.size());
    for (const ScheduledChunk& chunk : plan.chunks) {
      SchedRequest* s = chunk.request;
      in_flight.push_back(requests_.at(s->id));
      const Request& request = *in_flight.back();
      const std::span<const int32_t> blocks = kv_.block_ids(s->id);
      block_ids.emplace_back(blocks.begin(), blocks.end());
      ScheduledRequest r;
      r.token_ids = std::span<const int32_t>(s->tokens.data() + s->num_computed, static_cast<size_t>(chunk.num_tokens));
      r.num_computed = s->num_computed;
      r.block_ids = block_ids.back();
      r.sampling = request.sampling;
      r.sampling.step = request.num_generated();
      r.prompt_ids = std::span<const int32_t>(s->tokens.data(), static_cast<size_t>(s->num_prompt_tokens));
      r.output_ids = std::span<const int32_t>(s->tokens.data() + s->num_prompt_tokens,
                                              static_cast<size_t>(request.num_generated()));
      r.logit_bias = request.logit_bias;
      // Only a chunk that reaches the end of the request's tokens samples (a mid-prompt chunk's
      // token is discarded), so only such a chunk needs its grammar's mask.
      if (request.matcher && request.grammar_after < 0 &&
          s->num_computed + chunk.num_tokens == static_cast<int64_t>(s->tokens.size()))
        constrained.push_back(scheduled.size());
      scheduled.push_back(r);
    }
  }

  const std::function<void()> fill_masks = mask_filler(in_flight, constrained, scheduled);
  score_prompts(plan, in_flight, block_ids);
  const StepResult result = executor_.execute(scheduled, fill_masks);
  FG_CHECK(result.sampled.size() == scheduled.size(), "engine: the step returned {} tokens for {} requests",
           result.sampled.size(), scheduled.size());

  std::vector<RequestOutput> outputs;
  std::vector<std::shared_ptr<Request>> owners;  // [outputs]: whose callback runs
  {
    std::lock_guard lock(mutex_);
    ++stats_.steps;
    ++(result.replayed ? stats_.graph_steps : stats_.eager_steps);
    stats_.scheduled_requests += static_cast<int64_t>(scheduled.size());
    scheduler_.finish_step(plan);
    for (size_t i = 0; i < plan.chunks.size(); ++i) {
      Request& request = *in_flight[i];
      if (request.finished) continue;  // cancelled while the step ran
      // A prefill chunk that stops short of the end samples a token nobody asked for.
      if (request.sched.num_computed < static_cast<int64_t>(request.sched.tokens.size())) continue;
      const TokenLogprobs* logprobs =
          request.sampling.num_logprobs >= 0 && i < result.logprobs.size() ? &result.logprobs[i] : nullptr;
      outputs.push_back(accept_token(request, result.sampled[i], logprobs));
      owners.push_back(in_flight[i]);
    }
  }
  for (size_t k = 0; k < outputs.size(); ++k)
    if (owners[k]->on_output) owners[k]->on_output(outputs[k]);
  return true;
}

std::function<void()> Engine::mask_filler(const std::vector<std::shared_ptr<Request>>& in_flight,
                                          const std::vector<size_t>& constrained,
                                          std::vector<ScheduledRequest>& scheduled) {
  if (constrained.empty()) return {};
  // The matchers are the stepping thread's: cancel() never touches them, and the executor calls
  // the filler on this thread.
  std::vector<MaskFill> fills;
  for (const size_t i : constrained) {
    Request& request = *in_flight[i];
    request.mask.resize(static_cast<size_t>(bitmask_words(request.matcher->vocab_size())));
    scheduled[i].token_mask = request.mask;
    fills.push_back({request.matcher.get(), &request.grammar_pending, &request.mask});
  }
  return [this, fills = std::move(fills)] { masks_->fill(fills); };
}

void Engine::score_prompts(const SchedulerOutput& plan, const std::vector<std::shared_ptr<Request>>& in_flight,
                           const std::vector<std::vector<int32_t>>& block_ids) {
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    Request& request = *in_flight[i];
    const SchedRequest& s = request.sched;
    // This chunk's prompt positions that predict another prompt token.
    // Positions scored before a preemption made the request compute its prompt again are not
    // scored twice.
    const int64_t first = std::max<int64_t>(s.num_computed, static_cast<int64_t>(request.prompt_logprobs_out.size()));
    const int64_t last = std::min(s.num_computed + plan.chunks[i].num_tokens, s.num_prompt_tokens - 1);
    if (request.prompt_logprobs < 0 || first >= last) continue;
    std::vector<TokenLogprobs> scored =
        executor_.prompt_logprobs(s.tokens, first, last, block_ids[i], request.prompt_logprobs);
    std::lock_guard lock(mutex_);
    request.prompt_logprobs_out.insert(request.prompt_logprobs_out.end(), scored.begin(), scored.end());
  }
}

bool Engine::has_unfinished() const {
  std::lock_guard lock(mutex_);
  return !requests_.empty();
}

size_t Engine::num_running() const {
  std::lock_guard lock(mutex_);
  return scheduler_.num_running();
}

size_t Engine::num_waiting() const {
  std::lock_guard lock(mutex_);
  return scheduler_.num_waiting();
}

EngineStats Engine::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

int64_t Engine::num_preemptions() const {
  std::lock_guard lock(mutex_);
  return scheduler_.num_preemptions();
}

EngineGauges Engine::gauges() const {
  // Only the engine changes the block manager, and only under this lock (scheduling, a step's
  // end, a cancel), so everything read here belongs to one moment.
  std::lock_guard lock(mutex_);
  EngineGauges g;
  g.running = static_cast<int64_t>(scheduler_.num_running());
  g.waiting = static_cast<int64_t>(scheduler_.num_waiting());
  g.preemptions = scheduler_.num_preemptions();
  g.free_blocks = kv_.num_free_blocks();
  g.usable_blocks = kv_.num_usable_blocks();
  g.usage = kv_.usage();
  const auto& prefix = kv_.stats();
  g.prefix_query_tokens = prefix.prefix_query_tokens;
  g.prefix_hit_tokens = prefix.prefix_hit_tokens;
  return g;
}

}  // namespace fg
