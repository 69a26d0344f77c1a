// server/generation_job.cpp — see generation_job.h.
#include "server/generation_job.h"

namespace fg::server {

namespace {
double seconds(GenerationJob::Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

GenerationJob::GenerationJob(EngineService& service, ServerMetrics& metrics, int64_t n, bool keep_deltas)
    : service_(service), metrics_(metrics), keep_deltas_(keep_deltas), choices_(static_cast<size_t>(n)) {}

void GenerationJob::submit(const ParsedRequest& request) {
  const int64_t n = static_cast<int64_t>(choices_.size());
  {
    std::lock_guard lock(mutex_);
    submitted_at_ = Clock::now();
    prompt_tokens_ = static_cast<int64_t>(request.prompt.size());
  }
  for (int64_t i = 0; i < n; ++i) {
    RequestSpec spec = request.spec;
    spec.prompt = request.prompt;
    // Wrapping is fine: a seed is only a Philox key.
    if (spec.has_seed) spec.sampling.seed = static_cast<int64_t>(static_cast<uint64_t>(spec.sampling.seed) + i);
    spec.on_output = [self = shared_from_this(), i](const RequestOutput& output) { self->on_output(i, output); };
    uint64_t id = 0;
    try {
      id = service_.submit(std::move(spec));
    } catch (const Error& e) {
      service_.release(n - i);  // never submitted; the submitted ones release as they abort
      cancel_unfinished();
      if (const auto fatal = service_.fatal_error())
        throw ApiError(503, fmt::format("the engine stopped after an error: {}", *fatal), "", "engine_error");
      throw ApiError(400, e.what());
    }
    std::lock_guard lock(mutex_);
    choices_[static_cast<size_t>(i)].engine_id = id;
    choices_[static_cast<size_t>(i)].submitted = true;
  }
}

void GenerationJob::set_listener(std::function<void()> listener) {
  std::lock_guard lock(mutex_);
  listener_ = std::move(listener);
}

void GenerationJob::on_output(int64_t index, const RequestOutput& output) {
  const Clock::time_point now = Clock::now();
  bool finished_now = false;
  double e2e = 0.0;
  std::function<void()> listener;
  {
    std::lock_guard lock(mutex_);
    listener = listener_;
    Choice& c = choices_[static_cast<size_t>(index)];
    if (c.finished) return;
    if (!output.token_ids.empty()) {
      if (!c.has_token)
        metrics_.observe_time_to_first_token(seconds(now - submitted_at_));
      else
        metrics_.observe_inter_token_latency(seconds(now - c.last_token));
      c.has_token = true;
      c.last_token = now;
    }
    c.generated = output.num_generated_tokens;
    if (keep_deltas_) {
      deltas_.push_back({index, output});
    } else {
      c.out.text += output.text;
      c.out.token_ids.insert(c.out.token_ids.end(), output.token_ids.begin(), output.token_ids.end());
      c.out.logprobs.insert(c.out.logprobs.end(), output.logprobs.begin(), output.logprobs.end());
      if (!output.prompt_logprobs.empty()) c.out.prompt_logprobs = output.prompt_logprobs;
    }
    if (output.finished) {
      c.finished = true;
      c.out.finish_reason = output.finish_reason;
      c.out.stop_reason = output.stop_reason;
      ++num_finished_;
      finished_now = true;
      e2e = seconds(now - submitted_at_);
    }
  }
  if (finished_now) {
    metrics_.observe_finished(e2e, output.finish_reason);
    service_.release(1);
  }
  changed_.notify_all();
  if (listener) listener();
}

std::vector<GenerationJob::Delta> GenerationJob::take_deltas(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [this] { return !deltas_.empty() || num_finished_ == (int64_t)choices_.size(); });
  std::vector<Delta> out(std::make_move_iterator(deltas_.begin()), std::make_move_iterator(deltas_.end()));
  deltas_.clear();
  return out;
}

bool GenerationJob::wait_finished(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [this] { return num_finished_ == (int64_t)choices_.size(); });
}

bool GenerationJob::finished() const {
  std::lock_guard lock(mutex_);
  return num_finished_ == static_cast<int64_t>(choices_.size());
}

void GenerationJob::cancel_unfinished() {
  std::vector<uint64_t> ids;
  {
    std::lock_guard lock(mutex_);
    for (const Choice& c : choices_)
      if (c.submitted && !c.finished) ids.push_back(c.engine_id);
  }
  // Outside the lock: a cancel runs the request's callback, which takes it.
  for (uint64_t id : ids) service_.cancel(id);
}

std::vector<ChoiceOutput> GenerationJob::outputs() const {
  std::lock_guard lock(mutex_);
  std::vector<ChoiceOutput> out;
  out.reserve(choices_.size());
  for (const Choice& c : choices_) out.push_back(c.out);
  return out;
}

Usage GenerationJob::usage() const {
  std::lock_guard lock(mutex_);
  Usage u;
  u.prompt_tokens = prompt_tokens_;
  for (const Choice& c : choices_) u.completion_tokens += c.generated;
  return u;
}

}  // namespace fg::server
