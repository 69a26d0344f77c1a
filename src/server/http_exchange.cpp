// server/http_exchange.cpp — see http_exchange.h.
#include "server/http_exchange.h"

#include <boost/asio/post.hpp>

namespace fg::server {

void HttpConnection::Exchange::respond(HttpResponse response) {
  if (active_) connection_->respond(std::move(response));
}

void HttpConnection::Exchange::start_stream(HttpResponse head) {
  if (active_) connection_->start_stream(std::move(head));
}

void HttpConnection::Exchange::write(std::string data) {
  if (active_) connection_->write_body(std::move(data));
}

void HttpConnection::Exchange::end_stream() {
  if (active_) connection_->end_stream();
}

bool HttpConnection::Exchange::output_pending() const { return active_ && connection_->output_pending(); }

void HttpConnection::Exchange::set_provisional_head(HttpResponse head) {
  if (active_) connection_->provisional_ = std::move(head);
}

void HttpConnection::Exchange::wake() {
  if (wake_posted_.exchange(true)) return;  // one pending wake serves them all
  boost::asio::post(connection_->strand_, [self = shared_from_this()] {
    self->wake_posted_ = false;
    self->run_wake();
  });
}

void HttpConnection::Exchange::run_wake() {
  if (!active_ || !on_wake_) return;
  const std::function<void()> fn = on_wake_;  // it may end the exchange, which clears on_wake_
  try {
    fn();
  } catch (const std::exception& e) {
    connection_->handler_failed(shared_from_this(), e);
  }
}

void HttpConnection::Exchange::abort() {
  const std::function<void()> fn = std::move(on_abort_);
  detach();
  if (fn) fn();
}

void HttpConnection::Exchange::detach() {
  active_ = false;
  on_wake_ = nullptr;
  on_abort_ = nullptr;
}

}  // namespace fg::server
