// server/http_transport.cpp — see http_transport.h.
#include "server/http_transport.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>

#include "core/error.h"

namespace fg::server {

namespace asio = boost::asio;

namespace {

class PlainTransport final : public Transport {
 public:
  explicit PlainTransport(Tcp::socket socket) : socket_(std::move(socket)) {}
  bool tls() const override { return false; }
  void handshake(Handler done) override {
    asio::post(socket_.get_executor(), [done = std::move(done)] { done({}); });
  }
  void read_some(asio::mutable_buffer into, IoHandler done) override { socket_.async_read_some(into, std::move(done)); }
  void write(std::vector<asio::const_buffer> buffers, IoHandler done) override {
    asio::async_write(socket_, std::move(buffers), std::move(done));
  }
  void shutdown_send(Handler done) override {
    ErrorCode ec;
    socket_.shutdown(Tcp::socket::shutdown_send, ec);
    asio::post(socket_.get_executor(), [done = std::move(done), ec] { done(ec); });
  }

 private:
  Tcp::socket& socket_ref() override { return socket_; }
  Tcp::socket socket_;
};

class TlsTransport final : public Transport {
 public:
  TlsTransport(Tcp::socket socket, asio::ssl::context& context) : stream_(std::move(socket), context) {}
  bool tls() const override { return true; }
  void handshake(Handler done) override { stream_.async_handshake(asio::ssl::stream_base::server, std::move(done)); }
  void read_some(asio::mutable_buffer into, IoHandler done) override { stream_.async_read_some(into, std::move(done)); }
  void write(std::vector<asio::const_buffer> buffers, IoHandler done) override {
    asio::async_write(stream_, std::move(buffers), std::move(done));
  }
  void shutdown_send(Handler done) override { stream_.async_shutdown(std::move(done)); }

 private:
  Tcp::socket& socket_ref() override { return stream_.next_layer(); }
  asio::ssl::stream<Tcp::socket> stream_;
};

}  // namespace

void Transport::wait_error(Handler done) { socket().async_wait(Tcp::socket::wait_error, std::move(done)); }

void Transport::close() {
  ErrorCode ignored;
  socket().close(ignored);
}

std::unique_ptr<Transport> make_plain_transport(Transport::Tcp::socket socket) {
  return std::make_unique<PlainTransport>(std::move(socket));
}

std::unique_ptr<Transport> make_tls_transport(Transport::Tcp::socket socket, asio::ssl::context& context) {
  return std::make_unique<TlsTransport>(std::move(socket), context);
}

std::unique_ptr<asio::ssl::context> make_tls_context(const std::string& keyfile, const std::string& certfile) {
  auto context = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
  context->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1 |
                       asio::ssl::context::single_dh_use);
  // An idle TLS connection then holds no read/write buffers: thousands of them stay cheap.
  SSL_CTX_set_mode(context->native_handle(), SSL_MODE_RELEASE_BUFFERS);
  boost::system::error_code ec;
  context->use_certificate_chain_file(certfile, ec);
  FG_CHECK(!ec, "--ssl-certfile {}: {}", certfile, ec.message());
  context->use_private_key_file(keyfile, asio::ssl::context::pem, ec);
  FG_CHECK(!ec, "--ssl-keyfile {}: {}", keyfile, ec.message());
  FG_CHECK(SSL_CTX_check_private_key(context->native_handle()) == 1, "--ssl-keyfile {} does not match --ssl-certfile {}",
           keyfile, certfile);
  return context;
}

}  // namespace fg::server
