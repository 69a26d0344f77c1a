// server/http_server.cpp — see http_server.h: the acceptor, the I/O thread pool, the routes and
// what is decided from a request's head (Admission).
#include "server/http_server.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "core/log.h"
#include "core/thread_name.h"
#include "server/api_key.h"
#include "server/http_connection.h"
#include "server/http_cors.h"

namespace fg::server {

namespace asio = boost::asio;
using Tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;

namespace {

// Descriptors kept beyond the connection cap: model files, the log, the listening socket.
constexpr size_t kSpareDescriptors = 64;

// Raises the soft descriptor limit toward `want` (as far as the hard limit allows); returns the
// limit in force.
size_t raise_descriptor_limit(size_t want) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < want) {
    const rlim_t raised = limit.rlim_max == RLIM_INFINITY ? want : std::min<rlim_t>(want, limit.rlim_max);
    if (raised > limit.rlim_cur) {
      rlimit next = limit;
      next.rlim_cur = raised;
      if (::setrlimit(RLIMIT_NOFILE, &next) == 0) limit = next;
    }
  }
  return limit.rlim_cur == RLIM_INFINITY ? want : static_cast<size_t>(limit.rlim_cur);
}

// An exact path, or a "/prefix/*" pattern with something after the prefix.
bool route_matches(std::string_view pattern, std::string_view path) {
  if (!pattern.ends_with("/*")) return pattern == path;
  const std::string_view prefix = pattern.substr(0, pattern.size() - 1);
  return path.size() > prefix.size() && path.starts_with(prefix);
}

}  // namespace

class HttpServer::Impl final : public ConnectionHost {
 public:
  struct Route {
    std::string method, path;
    Handler handler;
    bool is_public;
  };

  explicit Impl(HttpServerOptions options)
      : options_(std::move(options)),
        cors_(options_.allowed_origins),
        registry_(options_.max_connections),
        ioc_(threads()),
        accept_strand_(asio::make_strand(ioc_)),
        acceptor_(accept_strand_),
        retry_(accept_strand_) {
    registry_.on_empty([this] { finish_if_drained(); });
  }
  // Connections still held by handlers the io_context destroys leave the registry then; nothing
  // may be posted to an io_context being destroyed.
  ~Impl() { finished_ = true; }

  int threads() const {
    if (options_.io_threads > 0) return options_.io_threads;
    return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
  }

  void add(const std::string& method, const std::string& path, Handler handler, bool is_public) {
    routes_.push_back({method, path, std::move(handler), is_public});
  }

  void bind() {
    FG_CHECK(options_.ssl_keyfile.empty() == options_.ssl_certfile.empty(),
             "--ssl-keyfile and --ssl-certfile go together (got only {})",
             options_.ssl_keyfile.empty() ? "--ssl-certfile" : "--ssl-keyfile");
    if (!options_.ssl_keyfile.empty()) tls_ = make_tls_context(options_.ssl_keyfile, options_.ssl_certfile);

    const size_t limit = raise_descriptor_limit(options_.max_connections + kSpareDescriptors);
    if (limit < options_.max_connections + kSpareDescriptors) {
      const size_t cap = limit > 2 * kSpareDescriptors ? limit - kSpareDescriptors : limit / 2;
      log::warning("the descriptor limit is {}: at most {} connections (not --max-connections {})", limit, cap,
                   options_.max_connections);
      registry_.set_max(cap);
    }

    ErrorCode ec;
    Tcp::resolver resolver(ioc_);
    const auto endpoints = resolver.resolve(options_.host, std::to_string(options_.port),
                                            Tcp::resolver::passive | Tcp::resolver::numeric_service, ec);
    FG_CHECK(!ec && !endpoints.empty(), "cannot resolve --host {}: {}", options_.host, ec.message());
    const Tcp::endpoint endpoint = endpoints.begin()->endpoint();
    const auto fail = [&](const char* what) {
      fg::fail("cannot listen on {}:{} ({}): {}", options_.host, options_.port, what, ec.message());
    };
    acceptor_.open(endpoint.protocol(), ec);
    if (ec) fail("open");
    // SO_REUSEADDR only: SO_REUSEPORT would let a second server bind a taken port.
    acceptor_.set_option(Tcp::acceptor::reuse_address(true), ec);
    acceptor_.bind(endpoint, ec);
    if (ec) fail("bind");
    acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) fail("listen");
    port_ = acceptor_.local_endpoint().port();
  }

  void run() {
    work_.emplace(ioc_.get_executor());
    asio::post(accept_strand_, [this] { accept(); });
    std::vector<std::thread> pool;
    for (int i = 1; i < threads(); ++i)
      pool.emplace_back([this] {
        set_thread_name("http-io");
        serve();
      });
    set_thread_name("http-io");
    serve();
    for (std::thread& t : pool) t.join();
  }

  void drain() {
    if (draining_.exchange(true)) return;
    asio::post(accept_strand_, [this] {
      ErrorCode ignored;
      acceptor_.close(ignored);
      retry_.cancel();
      accepting_stopped_ = true;
      for (const auto& member : registry_.members()) member->drain();
      finish_if_drained();
    });
  }

  // ConnectionHost
  const HttpServerOptions& options() const override { return options_; }
  ConnectionRegistry& registry() override { return registry_; }
  bool draining() const override { return draining_.load(); }
  Admission admit(const HttpRequest& request, const HeadInfo& head) override;
  void decorate(const HttpRequest& request, HttpResponse& response) const override {
    cors_.decorate(request, response);
  }

  int port_ = 0;
  std::atomic<bool> draining_{false};

 private:
  // One I/O thread. An exception escaping a handler is a bug: logged, and the thread goes on.
  void serve() {
    while (true) {
      try {
        ioc_.run();
        return;
      } catch (const std::exception& e) {
        log::error("HTTP I/O thread: {}", e.what());
      }
    }
  }

  void accept() {
    if (draining_.load()) return;
    acceptor_.async_accept(asio::make_strand(ioc_),
                           [this](const ErrorCode& ec, Tcp::socket socket) { on_accept(ec, std::move(socket)); });
  }

  void on_accept(const ErrorCode& ec, Tcp::socket socket) {
    if (draining_.load() || ec == asio::error::operation_aborted) return;
    if (ec) {
      // Out of descriptors (or another transient error): try again shortly instead of spinning.
      log::warning("accept: {}", ec.message());
      retry_.expires_after(std::chrono::milliseconds(50));
      retry_.async_wait([this](const ErrorCode& e) {
        if (!e) accept();
      });
      return;
    }
    accept();
    if (!registry_.reserve()) return refuse(socket);
    ErrorCode ignored;
    socket.set_option(Tcp::no_delay(true), ignored);  // an SSE event goes out when written
    auto transport = tls_ ? make_tls_transport(std::move(socket), *tls_) : make_plain_transport(std::move(socket));
    auto connection = std::make_shared<HttpConnection>(*this, std::move(transport));
    registry_.add(*connection);
    connection->start();
  }

  // Every slot is busy: a 503 in one non-blocking write (on plain HTTP), then close.
  void refuse(Tcp::socket& socket) {
    ErrorCode ignored;
    if (!tls_) {
      socket.non_blocking(true, ignored);
      socket.write_some(asio::buffer(busy_response()), ignored);
      socket.shutdown(Tcp::socket::shutdown_send, ignored);
    }
    socket.close(ignored);
  }

  void finish_if_drained() {
    if (!accepting_stopped_.load() || !registry_.empty() || finished_.exchange(true)) return;
    asio::post(ioc_, [this] { work_.reset(); });  // run() returns once the last handler has run
  }

  HttpServerOptions options_;
  CorsPolicy cors_;
  std::vector<Route> routes_;
  std::unique_ptr<asio::ssl::context> tls_;
  std::atomic<bool> accepting_stopped_{false}, finished_{false};
  ConnectionRegistry registry_;  // before the io_context: connections leave it as it is destroyed
  asio::io_context ioc_;
  asio::strand<asio::io_context::executor_type> accept_strand_;
  Tcp::acceptor acceptor_;
  asio::steady_timer retry_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
};

Admission HttpServer::Impl::admit(const HttpRequest& request, const HeadInfo& head) {
  Admission a;
  const auto refuse = [&a](const ApiError& error) {
    a.answer = HttpResponse::error(error);
    return a;
  };
  const Route* route = nullptr;
  std::string allowed;
  for (const Route& r : routes_) {
    if (!route_matches(r.path, request.path)) continue;
    allowed += allowed.empty() ? r.method : ", " + r.method;
    if (r.method == request.method || (r.method == "GET" && request.method == "HEAD")) route = &r;
  }
  if (request.method == "OPTIONS") {
    // RFC 9110 9.3.7: what the path accepts; and a CORS preflight's answer when it is one.
    if (allowed.empty() && request.path != "*")
      return refuse(ApiError(404, fmt::format("no route for OPTIONS {}", request.path), "", "not_found"));
    a.answer.status = 204;
    const std::string methods = (allowed.empty() ? std::string("GET, POST") : allowed) + ", OPTIONS";
    a.answer.headers.emplace_back("Allow", methods);
    cors_.preflight(request, methods, a.answer);
    return a;
  }
  if (allowed.empty())
    return refuse(ApiError(404, fmt::format("no route for {} {}", request.method, request.path), "", "not_found"));
  if (route == nullptr) {
    refuse(ApiError(405, fmt::format("{} does not accept {} (allowed: {})", request.path, request.method, allowed), "",
                    "method_not_allowed"));
    a.answer.headers.emplace_back("Allow", allowed);
    return a;
  }
  if (route->method == "POST") {
    if (head.transfer_encoding)
      return refuse(ApiError(411, "chunked request bodies are not accepted; send the body with a Content-Length", "",
                             "length_required"));
    if (!head.content_length)
      return refuse(ApiError(411, "a POST needs a Content-Length header", "", "length_required"));
    if (*head.content_length > options_.max_body_bytes)
      return refuse(ApiError(413,
                             fmt::format("the request body of {} bytes exceeds the limit of {} bytes",
                                         *head.content_length, options_.max_body_bytes),
                             "", "request_too_large"));
    a.read_body = true;
  }
  if (!route->is_public && !options_.api_key.empty() &&
      !bearer_token_matches(request.header("Authorization").value_or(""), options_.api_key)) {
    refuse(ApiError(401, "a valid API key is required (Authorization: Bearer <key>)", "", "invalid_api_key"));
    a.answer.headers.emplace_back("WWW-Authenticate", "Bearer");
    return a;
  }
  a.handler = route->handler;
  return a;
}

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

}  // namespace fg::server
