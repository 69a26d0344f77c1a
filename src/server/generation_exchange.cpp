// server/generation_exchange.cpp — see generation_exchange.h.
#include "server/generation_exchange.h"

#include <chrono>

namespace fg::server {

namespace {

using Clock = std::chrono::steady_clock;

// State shared by the callbacks of one exchange. The exchange holds it through its callbacks
// until the answer ends; the job reaches the exchange only through a weak pointer, so a job that
// outlives its client keeps nothing of the connection alive.
class GenerationDriver : public std::enable_shared_from_this<GenerationDriver> {
 public:
  GenerationDriver(const std::shared_ptr<HttpExchange>& exchange, std::shared_ptr<GenerationJob> job)
      : exchange_(exchange), job_(std::move(job)), start_(Clock::now()) {}

  // Wires the callbacks; the first wake picks up whatever arrived before the listener was set.
  void attach(std::function<void()> on_wake) {
    const std::weak_ptr<HttpExchange> weak = exchange_;
    job_->set_listener([weak] {
      if (const auto exchange = weak.lock()) exchange->wake();
    });
    exchange_->on_wake(std::move(on_wake));
    exchange_->on_abort([self = shared_from_this()] {
      self->log_fields();
      self->job_->cancel_unfinished();  // nobody reads the rest
    });
    exchange_->wake();
  }

  // Notes the time to first token the first time a token is seen.
  void saw_tokens(bool any) {
    if (any && ttft_s_ < 0) ttft_s_ = std::chrono::duration<double>(Clock::now() - start_).count();
  }

  void log_fields() {
    const Usage usage = job_->usage();
    exchange_->set_log_fields({usage.prompt_tokens, usage.completion_tokens, ttft_s_});
  }

  std::shared_ptr<HttpExchange> exchange_;
  std::shared_ptr<GenerationJob> job_;
  Clock::time_point start_;
  double ttft_s_ = -1;
  bool done_ = false;
};

}  // namespace

void stream_generation(const std::shared_ptr<HttpExchange>& exchange, std::shared_ptr<GenerationJob> job,
                       StreamFormatter format) {
  HttpResponse head;
  head.content_type = "text/event-stream";
  head.headers.emplace_back("Cache-Control", "no-cache");
  exchange->start_stream(std::move(head));
  exchange->write(format.begin());
  auto driver = std::make_shared<GenerationDriver>(exchange, std::move(job));
  auto formatter = std::make_shared<StreamFormatter>(std::move(format));
  // The callbacks hold the driver, which holds the exchange: the exchange drops its callbacks
  // when its answer ends, which ends the cycle.
  driver->attach([d = driver, formatter] {
    if (d->done_ || d->exchange_->output_pending()) return;  // woken again when the write is taken
    // Checked before taking: once finished, every delta is already queued.
    const bool finished = d->job_->finished();
    std::string out;
    bool tokens = false;
    for (const GenerationJob::Delta& delta : d->job_->take_deltas(std::chrono::milliseconds(0))) {
      tokens = tokens || !delta.output.token_ids.empty();
      out += formatter->delta(delta.index, delta.output);
    }
    d->saw_tokens(tokens);
    if (finished) out += formatter->end(d->job_->usage());
    d->exchange_->write(std::move(out));
    if (finished) {
      d->done_ = true;
      d->log_fields();
      d->exchange_->end_stream();
    }
  });
}

void answer_generation(const std::shared_ptr<HttpExchange>& exchange, std::shared_ptr<GenerationJob> job,
                       std::function<nlohmann::ordered_json()> body) {
  HttpResponse provisional;
  provisional.content_type = "application/json";
  exchange->set_provisional_head(std::move(provisional));
  auto driver = std::make_shared<GenerationDriver>(exchange, std::move(job));
  driver->attach([d = driver, body = std::move(body)] {
    if (d->done_) return;
    d->saw_tokens(d->job_->usage().completion_tokens > 0);
    if (!d->job_->finished()) return;
    d->done_ = true;
    d->log_fields();
    d->exchange_->respond(HttpResponse::json(200, body()));
  });
}

}  // namespace fg::server
