// server/http_exchange.h — HttpExchange as a connection implements it (server/http_connection.h):
// the handler's handle on one request and its answer. It outlives its turn on the connection
// (the engine may wake it long after the client left): once detached, everything it forwards is
// dropped. It owns the request, so a late caller never sees the connection's next one.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "server/http_connection.h"

namespace fg::server {

class HttpConnection::Exchange final : public HttpExchange, public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(std::shared_ptr<HttpConnection> connection, HttpRequest request)
      : request_(std::move(request)), connection_(std::move(connection)) {}

  const HttpRequest& request() const override { return request_; }
  void respond(HttpResponse response) override;
  void start_stream(HttpResponse head) override;
  void write(std::string data) override;
  void end_stream() override;
  bool output_pending() const override;
  void set_provisional_head(HttpResponse head) override;
  void on_wake(std::function<void()> fn) override { on_wake_ = std::move(fn); }
  void on_abort(std::function<void()> fn) override { on_abort_ = std::move(fn); }
  void set_log_fields(const GenerationLogFields& fields) override { fields_ = fields; }
  void wake() override;

  // For the connection, on its strand:
  void run_wake();  // the handler's on_wake, with what it throws answered
  void abort();     // the answer did not complete: tell the handler once, then detach
  void detach();    // drops the callbacks, which hold the handler's state (and through it, this)

  HttpRequest request_;
  GenerationLogFields fields_;

 private:
  std::shared_ptr<HttpConnection> connection_;
  bool active_ = true;
  std::function<void()> on_wake_, on_abort_;
  std::atomic<bool> wake_posted_{false};
};

}  // namespace fg::server
