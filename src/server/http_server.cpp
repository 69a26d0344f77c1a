// server/http_server.cpp — see http_server.h. cpp-httplib (Debian's 0.11) keeps its socket loop
// private, but Server::process_and_close_socket is virtual and process_request is protected: the
// Impl below runs its own keep-alive loop over its own Stream and hands each request to the
// library's parser, routing and writer.
#include "server/http_server.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "server/api_key.h"
#include "server/connection_stream.h"

namespace fg::server {

namespace {

// The connection the current thread serves (handlers ask about their client through it), and
// whether the current thread runs a connection only to turn it away (pool full).
thread_local Connection* tl_connection = nullptr;
thread_local bool tl_reject = false;

std::string regex_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// Threads for connections, started as needed up to a cap; connections beyond the cap wait in a
// bounded queue, and beyond that are answered 503 at once on the accepting thread.
class ConnectionPool final : public httplib::TaskQueue {
 public:
  ConnectionPool(size_t max_threads, size_t max_pending) : max_threads_(max_threads), max_pending_(max_pending) {}

  void enqueue(std::function<void()> fn) override {
    {
      std::unique_lock lock(mutex_);
      const bool idle_thread = idle_ > jobs_.size();  // one will be free for it
      const bool new_thread = !idle_thread && threads_.size() < max_threads_;
      if (idle_thread || new_thread || jobs_.size() < max_pending_) {
        jobs_.push_back(std::move(fn));
        if (new_thread) threads_.emplace_back([this] { work(); });
        lock.unlock();
        ready_.notify_one();
        return;
      }
    }
    tl_reject = true;  // process_and_close_socket answers 503 without blocking and closes
    fn();
    tl_reject = false;
  }

  void shutdown() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (std::thread& t : threads_) t.join();  // after the queued connections are served
  }

 private:
  void work() {
    while (true) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mutex_);
        ++idle_;
        ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        --idle_;
        if (jobs_.empty()) return;  // stopping, nothing left
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      fn();
    }
  }

  const size_t max_threads_, max_pending_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stopping_ = false;
};

const char* status_message_for(int status) {
  switch (status) {
    case 400:
      return "malformed HTTP request";
    case 404:
      return "not found";
    case 408:
      return "the request did not arrive within the read timeout";
    case 411:
      return "a Content-Length is required";
    case 413:
      return "the request body is too large";
    case 414:
      return "the request URI is too long";
    case 416:
      return "range requests are not supported";
    case 431:
      return "the request's headers are too large";
    default:
      return "the request could not be served";
  }
}

}  // namespace

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
}

void send_json(httplib::Response& res, int status, const nlohmann::ordered_json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const ApiError& error) { send_json(res, error.status(), error.body()); }

class HttpServer::Impl final : public httplib::Server {
 public:
  struct Route {
    std::string method, path;
    bool is_public;
  };

  explicit Impl(HttpServerOptions options) : options_(std::move(options)) {
    limits_.max_header_bytes = options_.max_header_bytes;
    limits_.read_timeout = std::chrono::seconds(options_.read_timeout_s);
    limits_.write_timeout = std::chrono::seconds(options_.write_timeout_s);
    set_read_timeout(options_.read_timeout_s);
    set_write_timeout(options_.write_timeout_s);  // SO_SNDTIMEO on accepted sockets
    set_payload_max_length(options_.max_body_bytes);
    // Only for the Keep-Alive header the library writes; the loop below enforces them.
    set_keep_alive_max_count(options_.keep_alive_max_requests);
    set_keep_alive_timeout(options_.keep_alive_timeout_s);
    // SO_REUSEADDR only: the library's default adds SO_REUSEPORT, which would let a second
    // server bind a port that is taken instead of failing.
    set_socket_options([](socket_t sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    new_task_queue = [this] { return new ConnectionPool(options_.max_connections, options_.max_pending_connections); };
    set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) { return admit(req, res); });
    set_error_handler(
        HandlerWithResponse([](const httplib::Request&, httplib::Response& res) { return library_error(res); }));
    set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unknown exception";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      send_error(res, ApiError(500, "internal error: " + what));
    });
  }

  void add(const std::string& method, const std::string& path, Handler handler, bool is_public) {
    routes_.push_back({method, path, is_public});
    if (method == "GET")
      Get(regex_escape(path), std::move(handler));
    else
      Post(regex_escape(path), std::move(handler));
  }

  void bind() {
    errno = 0;
    if (options_.port == 0) {
      const int port = bind_to_any_port(options_.host);
      FG_CHECK(port > 0, "cannot listen on {} (any port): {}", options_.host, std::strerror(errno));
      port_ = port;
    } else {
      FG_CHECK(bind_to_port(options_.host, options_.port), "cannot listen on {}:{}: {}", options_.host, options_.port,
               errno ? std::strerror(errno) : "is the address taken?");
      port_ = options_.port;
    }
    // The library listens with a backlog of 5: a burst of clients would see SYNs dropped and
    // retried a second later. Linux lets listen() be called again to raise it.
    ::listen(svr_sock_.load(), SOMAXCONN);
    std::lock_guard lock(listen_mutex_);
    listening_ = true;
  }

  void run() {
    listen_after_bind();
    std::lock_guard lock(listen_mutex_);
    listening_ = false;
  }

  void drain() {
    if (draining_.exchange(true)) return;
    // Shutting the listening socket down wakes accept(), which makes the library close it and
    // wait for its connection threads: the drain. (Server::stop() would instead cut streams.)
    std::lock_guard lock(listen_mutex_);
    if (listening_) ::shutdown(svr_sock_.load(), SHUT_RDWR);
  }

  int port_ = 0;
  std::atomic<bool> draining_{false};

 private:
  bool process_and_close_socket(socket_t sock) override {
    if (tl_reject) {
      reject(sock);
      return false;
    }
    Connection connection(sock);
    tl_connection = &connection;
    bool ok = false;
    for (size_t served = 0; served < options_.keep_alive_max_requests; ++served) {
      const auto wait = served == 0 ? limits_.read_timeout : std::chrono::seconds(options_.keep_alive_timeout_s);
      if (!connection.wait_for_request(wait, draining_)) break;
      ConnectionStream stream(connection, limits_);
      bool closed_by_client = false;
      const bool last = served + 1 == options_.keep_alive_max_requests || draining_.load();
      ok = process_request(stream, last, closed_by_client, [](httplib::Request& req) {
        // Responses go uncompressed: they are small, and a compressor would buffer SSE events.
        req.headers.erase("Accept-Encoding");
      });
      if (!ok || closed_by_client || connection.close_after_response || draining_.load()) break;
    }
    tl_connection = nullptr;
    connection.close(/*linger=*/connection.close_after_response);
    return ok;
  }

  // Turned away on the accepting thread: one non-blocking write, then close.
  static void reject(socket_t sock) {
    const std::string body =
        ApiError(503, "the server has too many connections; retry later", "", "server_busy").body().dump();
    const std::string response = fmt::format(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: "
        "close\r\nRetry-After: 1\r\n\r\n{}",
        body.size(), body);
    [[maybe_unused]] const ssize_t n = ::send(sock, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
  }

  // Before the body is read: what can be refused from the request line and headers is refused
  // here, so that no body is read for nothing.
  HandlerResponse admit(const httplib::Request& req, httplib::Response& res) {
    const bool has_body = req.has_header("Transfer-Encoding") ||
                          (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
    const auto refuse = [&](const ApiError& error) {
      send_error(res, error);
      // A body we did not read would be taken for the next request: close instead.
      if (has_body) close_after_response(res);
      return HandlerResponse::Handled;
    };
    if (draining_.load()) {
      close_after_response(res);
      return refuse(ApiError(503, "the server is shutting down", "", "server_shutting_down"));
    }
    const Route* route = nullptr;
    std::string allowed;
    for (const Route& r : routes_) {
      if (r.path != req.path) continue;
      allowed += allowed.empty() ? r.method : ", " + r.method;
      if (r.method == req.method || (r.method == "GET" && req.method == "HEAD")) route = &r;
    }
    if (allowed.empty())
      return refuse(ApiError(404, fmt::format("no route for {} {}", req.method, req.path), "", "not_found"));
    if (route == nullptr) {
      res.set_header("Allow", allowed);
      return refuse(ApiError(405, fmt::format("{} does not accept {} (allowed: {})", req.path, req.method, allowed), "",
                             "method_not_allowed"));
    }
    if (route->method == "POST") {
      if (req.has_header("Transfer-Encoding"))
        return refuse(ApiError(411, "chunked request bodies are not accepted; send the body with a Content-Length", "",
                               "length_required"));
      if (req.get_header_value_count("Content-Length") != 1)
        return refuse(ApiError(411, "a POST needs exactly one Content-Length header", "", "length_required"));
      const std::string length = req.get_header_value("Content-Length");
      if (length.empty() || length.size() > 18 || !std::all_of(length.begin(), length.end(), ::isdigit))
        return refuse(ApiError(400, fmt::format("Content-Length '{}' is not a number", length)));
      const uint64_t bytes = std::stoull(length);
      if (bytes > options_.max_body_bytes)
        return refuse(ApiError(
            413,
            fmt::format("the request body of {} bytes exceeds the limit of {} bytes", bytes, options_.max_body_bytes),
            "", "request_too_large"));
    } else if (has_body) {
      close_after_response(res);  // a GET's body is never read
    }
    if (!route->is_public && !options_.api_key.empty() &&
        !bearer_token_matches(req.get_header_value("Authorization"), options_.api_key)) {
      res.set_header("WWW-Authenticate", "Bearer");
      return refuse(ApiError(401, "a valid API key is required (Authorization: Bearer <key>)", "", "invalid_api_key"));
    }
    return HandlerResponse::Unhandled;
  }

  // Errors the library raises itself (malformed request, body read failure, URI too long...)
  // come with an empty body: give them ours. The connection's state is unknown after them.
  static HandlerResponse library_error(httplib::Response& res) {
    if (!res.body.empty() || res.content_provider_) return HandlerResponse::Unhandled;
    if (tl_connection != nullptr) {
      if (tl_connection->header_too_large)
        res.status = 431;
      else if (tl_connection->read_timed_out)
        res.status = 408;
    }
    HttpServer::close_after_response(res);
    send_error(res, ApiError(res.status, status_message_for(res.status)));
    return HandlerResponse::Handled;
  }

  HttpServerOptions options_;
  ConnectionLimits limits_;
  std::vector<Route> routes_;
  std::mutex listen_mutex_;
  bool listening_ = false;
};

HttpServer::HttpServer(HttpServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
HttpServer::~HttpServer() = default;

void HttpServer::get(const std::string& path, Handler handler, bool is_public) {
  impl_->add("GET", path, std::move(handler), is_public);
}
void HttpServer::post(const std::string& path, Handler handler, bool is_public) {
  impl_->add("POST", path, std::move(handler), is_public);
}
void HttpServer::bind() { impl_->bind(); }
int HttpServer::port() const { return impl_->port_; }
void HttpServer::run() { impl_->run(); }
void HttpServer::drain() { impl_->drain(); }
bool HttpServer::draining() const { return impl_->draining_.load(); }

bool HttpServer::client_gone() { return tl_connection != nullptr && tl_connection->peer_gone(); }

void HttpServer::close_after_response(httplib::Response& res) {
  if (tl_connection != nullptr) tl_connection->close_after_response = true;
  res.set_header("Connection", "close");
}

}  // namespace fg::server
