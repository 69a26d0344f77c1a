// server/connection_stream.h — one client connection, and each request on it as cpp-httplib's
// Stream. This is where the hardening the library lacks lives:
//  - a deadline for a whole request (line, headers and body), so a client trickling bytes
//    (slowloris) cannot hold a thread for longer than --http-read-timeout;
//  - a cap on the header block as a whole (the library caps only each line), refused with 431;
//  - a non-blocking check whether the client has gone, so a request whose client disconnected
//    is cancelled even while nothing is being written to it.
// Bytes read past one request stay buffered in the Connection for the next (pipelining).
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace fg::server {

struct ConnectionLimits {
  size_t max_header_bytes = 64 << 10;               // request line plus headers
  std::chrono::milliseconds read_timeout{30'000};   // a whole request must arrive within this
  std::chrono::milliseconds write_timeout{60'000};  // a blocked write gives up after this
};

class Connection {
 public:
  explicit Connection(int fd);

  int fd() const { return fd_; }
  // Waits until the next request's first bytes are here (buffered or readable) for up to
  // `timeout`, giving up early when `stop` becomes true. False on timeout, stop or hang-up.
  bool wait_for_request(std::chrono::milliseconds timeout, const std::atomic<bool>& stop);
  // Whether the client closed or reset the connection. Never blocks; data the client sent ahead
  // (a pipelined request) does not count as gone.
  bool peer_gone() const;
  // Ends the connection: half-closes, then (when `linger`) reads and drops what the client is
  // still sending for a moment, so it can read our answer rather than get a reset.
  void close(bool linger);

  // Set by the request being served; read by the server loop and its error handler.
  bool close_after_response = false;  // e.g. a refused request whose body was never read
  bool header_too_large = false;
  bool read_timed_out = false;

 private:
  friend class ConnectionStream;
  int fd_;
  std::vector<char> buffer_;  // [64 KiB] bytes received and not yet consumed: [begin_, end_)
  size_t begin_ = 0, end_ = 0;
};

class ConnectionStream final : public httplib::Stream {
 public:
  // One request: its read deadline starts now.
  ConnectionStream(Connection& connection, const ConnectionLimits& limits);

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  int socket() const override { return connection_.fd(); }

 private:
  int remaining_ms() const;  // until the read deadline, >= 0

  Connection& connection_;
  ConnectionLimits limits_;
  std::chrono::steady_clock::time_point deadline_;
  bool in_headers_ = true;  // until the blank line that ends the header block
  size_t header_bytes_ = 0;
  uint32_t last4_ = 0;  // the last four header bytes, to spot "\r\n\r\n"
};

}  // namespace fg::server
