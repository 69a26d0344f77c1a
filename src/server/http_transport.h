// server/http_transport.h — the byte stream under one connection: plain TCP, or TLS over it
// (OpenSSL through boost::asio::ssl), behind one small interface so that the connection's state
// machine (server/http_connection.h) is written once. Every operation completes on the strand
// the socket was made with; at most one read and one write are in flight at a time, which both
// Asio's socket and its ssl::stream allow.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fg::server {

class Transport {
 public:
  using Tcp = boost::asio::ip::tcp;
  using ErrorCode = boost::system::error_code;
  using IoHandler = std::function<void(const ErrorCode&, size_t)>;
  using Handler = std::function<void(const ErrorCode&)>;

  virtual ~Transport() = default;
  virtual bool tls() const = 0;
  Tcp::socket& socket() { return socket_ref(); }

  // TLS: the server side of the handshake. Plain: completes at once (posted, never inline).
  virtual void handshake(Handler done) = 0;
  virtual void read_some(boost::asio::mutable_buffer into, IoHandler done) = 0;
  // Writes all of `buffers` (they must live until `done`).
  virtual void write(std::vector<boost::asio::const_buffer> buffers, IoHandler done) = 0;
  // Ends our sending side: TLS sends close_notify (and waits for the peer's, bounded by the
  // caller's timer); plain TCP sends FIN at once. `done` runs on completion, not inline.
  virtual void shutdown_send(Handler done) = 0;
  // Completes when the socket reports an error or hang-up (a reset from a client that closed).
  void wait_error(Handler done);
  // Cancels everything in flight and closes the descriptor.
  void close();

 protected:
  virtual Tcp::socket& socket_ref() = 0;
};

std::unique_ptr<Transport> make_plain_transport(Transport::Tcp::socket socket);
std::unique_ptr<Transport> make_tls_transport(Transport::Tcp::socket socket, boost::asio::ssl::context& context);

// A TLS server context from PEM files (a certificate chain and its private key); TLS 1.2 and
// newer. Throws fg::Error naming the file that could not be used.
std::unique_ptr<boost::asio::ssl::context> make_tls_context(const std::string& keyfile, const std::string& certfile);

}  // namespace fg::server
