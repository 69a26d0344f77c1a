// server/http_connection.cpp — see http_connection.h.
#include "server/http_connection.h"

#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <cstring>

#include "core/log.h"
#include "server/http_access_log.h"
#include "server/http_exchange.h"

namespace fg::server {

namespace asio = boost::asio;
using ErrorCode = boost::system::error_code;

namespace {

constexpr size_t kInitialBuffer = 2 << 10;  // an idle connection holds this much
constexpr size_t kBodyChunk = 64 << 10;     // reads of a body go through the buffer this much at a time
constexpr auto kLinger = std::chrono::seconds(2);
constexpr size_t kLingerBytes = 16 << 20;  // what we read and drop at most while closing
constexpr size_t kMaxBatch = 64;           // strings gathered into one write

bool is_eof(const ErrorCode& ec) { return ec == asio::error::eof || ec == asio::ssl::error::stream_truncated; }

}  // namespace

HttpConnection::HttpConnection(ConnectionHost& host, std::unique_ptr<Transport> transport)
    : host_(host),
      options_(host.options()),
      transport_(std::move(transport)),
      strand_(transport_->socket().get_executor()),
      timer_(strand_),
      in_(kInitialBuffer) {
  ErrorCode ec;
  const auto peer = transport_->socket().remote_endpoint(ec);
  if (!ec) remote_ = peer.address().to_string() + ":" + std::to_string(peer.port());
}

HttpConnection::~HttpConnection() { host_.registry().remove(*this); }

void HttpConnection::start() {
  asio::post(strand_, [self = shared_from_this()] {
    self->set_deadline(Clock::now() + std::chrono::seconds(self->options_.read_timeout_s));
    self->transport_->handshake([self](const ErrorCode& ec) { self->on_handshake(ec); });
  });
}

void HttpConnection::evict() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->state_ == State::kIdle) self->close();
  });
}

void HttpConnection::drain() {
  // Busy connections see the drain when their answer ends (finish_answer) or their next head
  // arrives (503).
  asio::post(strand_, [self = shared_from_this()] {
    if (self->state_ == State::kIdle) self->close();
  });
}

// ---------------------------------------------------------------------------------------------
// Reading

void HttpConnection::on_handshake(const ErrorCode& ec) {
  if (state_ == State::kClosed) return;
  if (ec) return close();
  become_idle();
}

void HttpConnection::become_idle() {
  state_ = State::kIdle;
  scanner_.reset();
  request_ = HttpRequest{};
  has_request_ = false;
  handler_ = nullptr;
  body_left_ = 0;
  keep_alive_ = true;
  close_after_ = false;
  // With nothing buffered the connection waits for its next request. The offsets go back to the
  // buffer's start in read(), not here: a read issued while the request was handled may be in
  // flight, and it lands at in_end_.
  if (in_begin_ == in_end_) {
    if (peer_eof_) return graceful_close();
    if (host_.draining()) return close();
    host_.registry().set_idle(*this);
    const int wait_s = served_ == 0 ? options_.read_timeout_s : options_.keep_alive_timeout_s;
    set_deadline(Clock::now() + std::chrono::seconds(wait_s));
  } else {
    process();  // a pipelined request is here already
  }
  read();
}

bool HttpConnection::start_request() {
  if (!host_.registry().set_busy(*this)) {  // evicted meanwhile
    close();
    return false;
  }
  state_ = State::kHead;
  scanner_.emplace(options_.max_header_bytes);
  request_start_ = Clock::now();
  set_deadline(request_start_ + std::chrono::seconds(options_.read_timeout_s));
  return true;
}

void HttpConnection::read() {
  if (reading_ || peer_eof_ || state_ == State::kClosed) return;
  if (in_begin_ == in_end_) {
    in_begin_ = in_end_ = 0;
    // A big request went by: back to the idle size. Only here, where no read is in flight (one
    // issued while a request is handled writes into the buffer, at in_end_, until it completes).
    if (state_ != State::kBody && in_.size() > 4 * kInitialBuffer) in_ = std::vector<char>(kInitialBuffer);
  }
  if (in_end_ == in_.size()) {
    // Room: at most the header limit (and a byte, to see it exceeded) of a request, or of
    // pipelined requests held while one is served; a body passes through in chunks.
    const size_t cap = state_ == State::kBody ? kBodyChunk : options_.max_header_bytes + 1;
    if (in_begin_ > 0) {
      std::memmove(in_.data(), in_.data() + in_begin_, in_end_ - in_begin_);
      in_end_ -= in_begin_;
      in_begin_ = 0;
    } else if (in_.size() < cap) {
      in_.resize(std::min(cap, 2 * in_.size()));
    } else {
      // Full: reading resumes once the request in the buffer is consumed. Until then a client
      // that resets is seen by the socket's error state, not by a read.
      if (state_ == State::kHandling) watch_for_reset();
      return;
    }
  }
  reading_ = true;
  transport_->read_some(asio::buffer(in_.data() + in_end_, in_.size() - in_end_),
                        [self = shared_from_this()](const ErrorCode& ec, size_t n) { self->on_read(ec, n); });
}

void HttpConnection::on_read(const ErrorCode& ec, size_t n) {
  reading_ = false;
  if (state_ == State::kClosed) return;
  if (state_ == State::kClosing) {
    // Dropping what the client still sends, so that it reads our answer rather than a reset.
    dropped_ += n;
    if (ec || dropped_ > kLingerBytes) return close();
    in_begin_ = in_end_ = 0;
    return read();
  }
  if (ec) return is_eof(ec) ? on_peer_eof() : close();
  in_end_ += n;
  process();
  read();
}

void HttpConnection::on_peer_eof() {
  peer_eof_ = true;
  switch (state_) {
    case State::kHandshake:
    case State::kIdle:
      return close();
    case State::kHead:
    case State::kBody:
      return close();  // the request can never complete
    case State::kHandling:
      // The client sends no more; it may still read. For a non-streamed answer that is not
      // ready, send its head now: a client that closed answers it with a reset.
      if (!answering_ && provisional_ && exchange_) {
        early_head_ = true;
        HttpResponse head = std::move(*provisional_);
        provisional_.reset();
        start_stream(std::move(head));
      }
      return watch_for_reset();
    case State::kClosing:
    case State::kClosed:
      return;
  }
}

void HttpConnection::process() {
  while (true) {
    const std::string_view buffered(in_.data() + in_begin_, in_end_ - in_begin_);
    switch (state_) {
      case State::kIdle:
        if (buffered.empty() || !start_request()) return;
        break;
      case State::kHead: {
        const HeadScanner::Result r = scanner_->scan(buffered);
        if (r == HeadScanner::Result::kNeedMore) {
          if (peer_eof_) close();  // the rest will never come
          return;
        }
        if (r == HeadScanner::Result::kComplete) {
          const std::string_view head =
              buffered.substr(scanner_->head_begin(), scanner_->head_end() - scanner_->head_begin());
          in_begin_ += scanner_->head_end();  // the bytes stay in place until the next read
          on_head(head);
          break;
        }
        close_after_ = true;
        if (r == HeadScanner::Result::kLineTooLong)
          answer(HttpResponse::error(ApiError(
              414, fmt::format("the request line exceeds the limit of {} bytes", options_.max_header_bytes), "",
              "uri_too_long")));
        else if (r == HeadScanner::Result::kTooLarge)
          answer(HttpResponse::error(ApiError(
              431, fmt::format("the request's headers exceed the limit of {} bytes", options_.max_header_bytes), "",
              "headers_too_large")));
        else
          answer(HttpResponse::error(
              ApiError(400, fmt::format("malformed HTTP request: {}", scanner_->error()), "", "bad_request")));
        return;
      }
      case State::kBody: {
        const size_t take = std::min<uint64_t>(buffered.size(), body_left_);
        request_.body.append(buffered.data(), take);
        in_begin_ += take;
        body_left_ -= take;
        if (body_left_ > 0) {
          if (peer_eof_) close();
          return;
        }
        dispatch();
        break;
      }
      default:
        return;  // serving: later bytes are a pipelined request, read once this one is answered
    }
  }
}

void HttpConnection::on_head(std::string_view head) {
  HeadInfo info;
  try {
    info = parse_head(head, options_.root_path, request_);
  } catch (const ApiError& e) {
    close_after_ = true;
    return answer(HttpResponse::error(e));
  }
  has_request_ = true;
  request_.remote = remote_;
  request_.request_id = request_id_for(request_);
  head_only_ = request_.method == "HEAD";
  keep_alive_ = info.keep_alive && served_ + 1 < options_.keep_alive_max_requests;
  if (host_.draining()) {
    close_after_ = true;
    return answer(HttpResponse::error(ApiError(503, "the server is shutting down", "", "server_shutting_down")));
  }
  Admission admission = host_.admit(request_, info);
  // A body we do not read would be taken for the next request: close after the answer instead.
  if (info.has_body() && !(admission.handler && admission.read_body)) close_after_ = true;
  if (!admission.handler) return answer(std::move(admission.answer));
  handler_ = std::move(admission.handler);
  if (admission.read_body && info.content_length.value_or(0) > 0) {
    state_ = State::kBody;
    body_left_ = *info.content_length;
    request_.body.reserve(body_left_);
    if (info.expect_continue && in_begin_ == in_end_) queue(std::string(kContinue));
    return;
  }
  dispatch();
}

void HttpConnection::dispatch() {
  state_ = State::kHandling;
  set_deadline(Clock::time_point::max());  // a generation takes what it takes
  exchange_ = std::make_shared<Exchange>(shared_from_this(), std::move(request_));
  const std::shared_ptr<Exchange> exchange = exchange_;
  const HttpHandler handler = std::move(handler_);
  try {
    handler(exchange);
  } catch (const std::exception& e) {
    handler_failed(exchange, e);
  }
}

void HttpConnection::handler_failed(const std::shared_ptr<Exchange>& exchange, const std::exception& e) {
  if (exchange_ != exchange) return;  // ended meanwhile
  if (answering_) return close();     // a stream that has started cannot carry an error
  if (const auto* api = dynamic_cast<const ApiError*>(&e)) return respond(HttpResponse::error(*api));
  // A bug, not the client's fault; say so rather than drop the connection.
  log::error("internal error serving {}: {}", exchange->request_.path.substr(0, 200), e.what());
  respond(HttpResponse::error(ApiError(500, fmt::format("internal error: {}", e.what()))));
}

// ---------------------------------------------------------------------------------------------
// Answering

void HttpConnection::answer(HttpResponse response) {
  state_ = State::kHandling;
  set_deadline(Clock::time_point::max());
  respond(std::move(response));
}

bool HttpConnection::keep_alive_now() {
  if (!keep_alive_ || close_after_ || host_.draining()) close_after_ = true;
  return !close_after_;
}

void HttpConnection::respond(HttpResponse response) {
  if (complete_ || state_ != State::kHandling) return;
  if (early_head_) {
    // The provisional head went out: the body follows under it (chunked, or up to the close).
    if (response.status != status_) return close();
    write_body(std::move(response.body));
    return end_stream();
  }
  if (answering_) return;
  if (has_request_) host_.decorate(exchange_ ? exchange_->request_ : request_, response);
  status_ = response.status;
  answering_ = complete_ = true;
  WireHead wire;
  wire.version = has_request_ ? (exchange_ ? exchange_->request_.version : request_.version) : 11;
  wire.content_length = response.body.size();
  wire.keep_alive = keep_alive_now();
  wire.request_id = exchange_ ? exchange_->request_.request_id : request_.request_id;
  std::string bytes = response_head(response, wire);
  if (!head_only_ && !bodiless_status(response.status)) bytes += response.body;
  queue(std::move(bytes));
}

void HttpConnection::start_stream(HttpResponse head) {
  if (answering_ || state_ != State::kHandling || !exchange_) return;
  host_.decorate(exchange_->request_, head);
  status_ = head.status;
  answering_ = true;
  WireHead wire;
  wire.version = exchange_->request_.version;
  // HTTP/1.0 has no chunked coding: the body ends when the connection does.
  framing_ = wire.version == 10 ? BodyFraming::kClose : BodyFraming::kChunked;
  wire.framing = framing_;
  if (framing_ == BodyFraming::kClose) close_after_ = true;
  wire.keep_alive = keep_alive_now();
  wire.request_id = exchange_->request_.request_id;
  queue(response_head(head, wire));
}

void HttpConnection::write_body(std::string data) {
  if (!answering_ || complete_ || data.empty()) return;
  queue(framing_ == BodyFraming::kChunked ? chunk(data) : std::move(data));
}

void HttpConnection::end_stream() {
  if (!answering_ || complete_) return;
  complete_ = true;
  queue(framing_ == BodyFraming::kChunked ? std::string(kLastChunk) : std::string());
}

void HttpConnection::queue(std::string bytes) {
  if (!bytes.empty()) out_.push_back(std::move(bytes));
  pump_output();
}

void HttpConnection::pump_output() {
  if (writing_ || state_ == State::kClosing || state_ == State::kClosed) return;
  if (out_.empty()) {
    // Finished from a callback of the handler's: end the answer after it returns.
    if (answering_ && complete_ && !finish_posted_) {
      finish_posted_ = true;
      asio::post(strand_, [self = shared_from_this()] { self->finish_answer(); });
    }
    return;
  }
  writing_ = true;
  batch_.clear();
  while (!out_.empty() && batch_.size() < kMaxBatch) {
    batch_.push_back(std::move(out_.front()));
    out_.pop_front();
  }
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(batch_.size());
  for (const std::string& s : batch_) buffers.emplace_back(asio::buffer(s));
  if (state_ == State::kHandling) set_deadline(Clock::now() + std::chrono::seconds(options_.write_timeout_s));
  transport_->write(std::move(buffers),
                    [self = shared_from_this()](const ErrorCode& ec, size_t) { self->on_written(ec); });
}

void HttpConnection::on_written(const ErrorCode& ec) {
  writing_ = false;
  batch_.clear();
  if (state_ == State::kClosed || state_ == State::kClosing) return;
  if (ec) return close();  // the client is gone: close() aborts the exchange
  if (!out_.empty()) return pump_output();
  if (state_ == State::kHandling) set_deadline(Clock::time_point::max());
  if (answering_ && complete_) return finish_answer();
  if (answering_ && exchange_) exchange_->run_wake();  // a stream: room for more
}

void HttpConnection::finish_answer() {
  if (state_ != State::kHandling || !complete_ || output_pending()) return;
  log_request(status_);
  ++served_;
  if (exchange_) {
    exchange_->detach();
    exchange_.reset();
  }
  answering_ = complete_ = finish_posted_ = early_head_ = head_only_ = false;
  framing_ = BodyFraming::kLength;
  provisional_.reset();
  status_ = 0;
  if (close_after_ || host_.draining()) return graceful_close();
  become_idle();
}

// ---------------------------------------------------------------------------------------------
// Ending

void HttpConnection::watch_for_reset() {
  if (watching_reset_) return;
  watching_reset_ = true;
  transport_->wait_error([self = shared_from_this()](const ErrorCode& ec) {
    self->watching_reset_ = false;
    if (ec == asio::error::operation_aborted || self->state_ != State::kHandling) return;
    self->close();  // a reset or an error: nobody reads the answer
  });
}

void HttpConnection::graceful_close() {
  if (state_ == State::kClosing || state_ == State::kClosed) return;
  state_ = State::kClosing;
  host_.registry().set_busy(*this);  // not idle, so never evicted: it is on its way out
  set_deadline(Clock::now() + kLinger);
  in_begin_ = in_end_ = 0;
  transport_->shutdown_send([self = shared_from_this()](const ErrorCode&) {
    // TLS: close_notify went out (and came back, or failed): done. TCP: FIN is out; read and
    // drop until the client closes too, or the linger deadline.
    if (self->transport_->tls() || self->peer_eof_)
      self->close();
    else
      self->read();
  });
}

void HttpConnection::close() {
  if (state_ == State::kClosed) return;
  const bool unanswered = exchange_ && !(answering_ && complete_ && !output_pending());
  state_ = State::kClosed;
  host_.registry().remove(*this);
  timer_.cancel();
  transport_->close();
  out_.clear();
  if (exchange_) {
    if (unanswered)
      exchange_->abort();  // the handler cancels its work, and notes its log fields
    else
      exchange_->detach();
    log_request(unanswered && !answering_ ? 499 : status_);  // 499: nginx's "client closed request"
    exchange_.reset();
  }
}

void HttpConnection::log_request(int status) {
  if (!options_.log_requests) return;
  AccessLogEntry entry;
  entry.request = exchange_ ? &exchange_->request_ : has_request_ ? &request_ : nullptr;
  entry.remote = remote_;
  entry.status = status;
  if (state_ != State::kIdle && state_ != State::kHandshake)
    entry.duration_s = std::chrono::duration<double>(Clock::now() - request_start_).count();
  if (exchange_) entry.generation = exchange_->fields_;
  log_access(entry);
}

// ---------------------------------------------------------------------------------------------
// The timer: one deadline at a time, the current state's.

void HttpConnection::set_deadline(Clock::time_point at) {
  deadline_ = at;
  if (at == Clock::time_point::max()) return;  // a pending wait fires and finds nothing due
  if (timer_waiting_) {
    // A later deadline: the wait fires early and waits again. An earlier one: cancel the wait,
    // whose handler waits again for the new expiry.
    if (timer_.expiry() > at) timer_.expires_at(at);
    return;
  }
  timer_.expires_at(at);
  wait_timer();
}

void HttpConnection::wait_timer() {
  timer_waiting_ = true;
  timer_.async_wait([self = shared_from_this()](const ErrorCode&) { self->on_timer(); });
}

void HttpConnection::on_timer() {
  timer_waiting_ = false;
  if (state_ == State::kClosed || deadline_ == Clock::time_point::max()) return;
  if (Clock::now() < deadline_) {
    timer_.expires_at(deadline_);
    return wait_timer();
  }
  deadline_ = Clock::time_point::max();
  on_deadline();
}

void HttpConnection::on_deadline() {
  switch (state_) {
    case State::kHead:
    case State::kBody:
      // Too slow (e.g. a byte a second): answered, then closed.
      close_after_ = true;
      return answer(HttpResponse::error(ApiError(
          408, fmt::format("the request did not arrive within {} s", options_.read_timeout_s), "", "request_timeout")));
    case State::kHandling:  // a write the client did not take in time
    case State::kHandshake:
    case State::kIdle:
    case State::kClosing:
      return close();
    case State::kClosed:
      return;
  }
}

}  // namespace fg::server
