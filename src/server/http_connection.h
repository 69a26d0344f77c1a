// server/http_connection.h — one client connection's state machine, event-driven on its strand
// (every handler of its socket and timer runs there, one at a time, on whichever I/O thread is
// free): TLS handshake → idle → request head → body → handler → answer → idle again, or close.
//
// Limits it enforces, each with one timer (the connection's single deadline is the current
// state's): the handshake and a whole request within --http-read-timeout (a request that misses
// it is answered 408), an idle connection closed after --keep-alive-timeout, a write the client
// does not take within --http-write-timeout drops it; the head within the header limit (414, 431,
// see server/http_head.h); a body only when its route wants one, of at most the body limit.
//
// A client that sends EOF (a half-close, RFC 9112 9.6) may still read: its answer is sent. Whether
// a client has really gone is learned from the socket (a reset, an error, a failed write); while
// a non-streamed answer is pending the exchange's provisional head is sent on EOF to find out,
// so that a client that closed has its request cancelled within a step.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/http_head.h"
#include "server/http_message.h"
#include "server/http_options.h"
#include "server/http_registry.h"
#include "server/http_transport.h"
#include "server/http_wire.h"

namespace fg::server {

using HttpHandler = std::function<void(const std::shared_ptr<HttpExchange>&)>;

// What the server decided from a request's head, before any body is read.
struct Admission {
  HttpHandler handler;  // null: `answer` is the answer, and the body (if any) is not read
  HttpResponse answer;
  bool read_body = false;  // read the Content-Length body (already checked against the limit)
};

// What a connection asks of its server (server/http_server.cpp).
class ConnectionHost {
 public:
  virtual const HttpServerOptions& options() const = 0;
  virtual ConnectionRegistry& registry() = 0;
  virtual bool draining() const = 0;
  // Routes, methods, body framing and size, the API key.
  virtual Admission admit(const HttpRequest& request, const HeadInfo& head) = 0;
  // Headers every answer to `request` carries (CORS).
  virtual void decorate(const HttpRequest& request, HttpResponse& response) const = 0;

 protected:
  ~ConnectionHost() = default;
};

class HttpConnection final : public ConnectionRegistry::Member, public std::enable_shared_from_this<HttpConnection> {
 public:
  // Registered with host.registry() by the caller, before start().
  HttpConnection(ConnectionHost& host, std::unique_ptr<Transport> transport);
  ~HttpConnection() override;

  void start();  // any thread
  void evict() override;
  void drain() override;
  std::shared_ptr<Member> self() override { return weak_from_this().lock(); }

 private:
  class Exchange;
  using Clock = std::chrono::steady_clock;
  enum class State { kHandshake, kIdle, kHead, kBody, kHandling, kClosing, kClosed };

  // Reading and parsing.
  void on_handshake(const boost::system::error_code& ec);
  void become_idle();
  bool start_request();
  void read();
  void on_read(const boost::system::error_code& ec, size_t n);
  void on_peer_eof();
  void process();
  void on_head(std::string_view head);
  void dispatch();
  // The handler (or one of its callbacks) threw: an ApiError is answered, anything else is a 500.
  void handler_failed(const std::shared_ptr<Exchange>& exchange, const std::exception& e);
  // Answering (also what Exchange forwards to).
  void answer(HttpResponse response);  // a refusal, without a handler
  void respond(HttpResponse response);
  void start_stream(HttpResponse head);
  void write_body(std::string data);
  void end_stream();
  bool output_pending() const { return writing_ || !out_.empty(); }
  bool keep_alive_now();
  void queue(std::string bytes);
  void pump_output();
  void on_written(const boost::system::error_code& ec);
  void finish_answer();
  // Ending.
  void watch_for_reset();
  void graceful_close();
  void close();
  void log_request(int status);
  // The one timer.
  void set_deadline(Clock::time_point at);
  void wait_timer();
  void on_timer();
  void on_deadline();

  ConnectionHost& host_;
  const HttpServerOptions& options_;
  std::unique_ptr<Transport> transport_;
  boost::asio::any_io_executor strand_;
  boost::asio::steady_timer timer_;
  Clock::time_point deadline_ = Clock::time_point::max();
  bool timer_waiting_ = false;

  State state_ = State::kHandshake;
  std::string remote_;
  size_t served_ = 0;  // answers completed on this connection

  // Input: bytes received and not consumed are [in_begin_, in_end_) of in_.
  std::vector<char> in_;
  size_t in_begin_ = 0, in_end_ = 0;
  bool reading_ = false, peer_eof_ = false, watching_reset_ = false;
  size_t dropped_ = 0;  // bytes read and thrown away while closing

  // The request being read or served.
  std::optional<HeadScanner> scanner_;
  HttpRequest request_;  // moved into the exchange at dispatch
  bool has_request_ = false;
  HttpHandler handler_;
  uint64_t body_left_ = 0;
  Clock::time_point request_start_;
  bool keep_alive_ = true, close_after_ = false;

  // The answer.
  std::shared_ptr<Exchange> exchange_;
  bool answering_ = false;  // its head is queued
  bool complete_ = false;   // all of it is queued
  bool finish_posted_ = false;
  bool head_only_ = false;  // a HEAD request: no body
  bool early_head_ = false;  // the provisional head went out before the answer
  BodyFraming framing_ = BodyFraming::kLength;
  int status_ = 0;
  std::optional<HttpResponse> provisional_;

  // Output: queued strings, and the batch being written (kept alive until written).
  std::deque<std::string> out_;
  std::vector<std::string> batch_;
  bool writing_ = false;
};

}  // namespace fg::server
