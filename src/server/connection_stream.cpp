// server/connection_stream.cpp — see connection_stream.h.
#include "server/connection_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace fg::server {

namespace {

using Clock = std::chrono::steady_clock;

// poll() on one descriptor, retried on EINTR; returns revents (0 on timeout or error).
short poll_one(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  while (true) {
    const int n = ::poll(&p, 1, timeout_ms);
    if (n > 0) return p.revents;
    if (n == 0 || errno != EINTR) return 0;
  }
}

void address_of(const sockaddr_storage& a, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
    port = ntohs(v6->sin6_port);
  }
  ip = text;
}

}  // namespace

Connection::Connection(int fd) : fd_(fd), buffer_(64 << 10) {}

bool Connection::wait_for_request(std::chrono::milliseconds timeout, const std::atomic<bool>& stop) {
  if (begin_ < end_) return true;
  const auto until = Clock::now() + timeout;
  while (!stop.load()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) return false;
    // Short slices, so that a drain closes idle connections promptly.
    const short revents = poll_one(fd_, POLLIN, static_cast<int>(std::min<int64_t>(left, 100)));
    if (revents & (POLLERR | POLLNVAL)) return false;
    if (revents & (POLLIN | POLLHUP)) return true;  // a hang-up reads as end of stream
  }
  return false;
}

bool Connection::peer_gone() const {
  const short revents = poll_one(fd_, POLLIN | POLLRDHUP, 0);
  if (revents & (POLLERR | POLLHUP | POLLNVAL | POLLRDHUP)) return true;
  if (!(revents & POLLIN)) return false;
  char byte;
  const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

void Connection::close(bool linger) {
  ::shutdown(fd_, SHUT_WR);
  if (linger) {
    // Drop what the client still sends (a body we refused to read), for up to 2 s or 16 MiB.
    const auto until = Clock::now() + std::chrono::seconds(2);
    size_t dropped = 0;
    while (dropped < (16u << 20)) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
      if (left <= 0 || !(poll_one(fd_, POLLIN, static_cast<int>(left)) & (POLLIN | POLLHUP))) break;
      const ssize_t n = ::recv(fd_, buffer_.data(), buffer_.size(), MSG_DONTWAIT);
      if (n <= 0) break;
      dropped += static_cast<size_t>(n);
    }
  }
  ::close(fd_);
}

ConnectionStream::ConnectionStream(Connection& connection, const ConnectionLimits& limits)
    : connection_(connection), limits_(limits), deadline_(Clock::now() + limits.read_timeout) {}

int ConnectionStream::remaining_ms() const {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, INT32_MAX));
}

bool ConnectionStream::is_readable() const {
  if (connection_.begin_ < connection_.end_) return true;
  return (poll_one(connection_.fd_, POLLIN, remaining_ms()) & (POLLIN | POLLHUP)) != 0;
}

bool ConnectionStream::is_writable() const {
  const int timeout = static_cast<int>(limits_.write_timeout.count());
  return (poll_one(connection_.fd_, POLLOUT, timeout) & POLLOUT) != 0 && !connection_.peer_gone();
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
  Connection& c = connection_;
  if (c.begin_ == c.end_) {
    const int left = remaining_ms();
    if (left == 0 || !(poll_one(c.fd_, POLLIN, left) & (POLLIN | POLLHUP | POLLERR))) {
      c.read_timed_out = true;
      return -1;
    }
    ssize_t n;
    do {
      n = ::recv(c.fd_, c.buffer_.data(), c.buffer_.size(), 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return n;
    c.begin_ = 0;
    c.end_ = static_cast<size_t>(n);
  }
  const size_t take = std::min(size, c.end_ - c.begin_);
  std::memcpy(ptr, c.buffer_.data() + c.begin_, take);
  c.begin_ += take;
  if (in_headers_) {
    for (size_t i = 0; i < take && in_headers_; ++i) {
      last4_ = (last4_ << 8) | static_cast<unsigned char>(ptr[i]);
      if (++header_bytes_ > limits_.max_header_bytes) {
        c.header_too_large = true;
        c.close_after_response = true;
        return -1;
      }
      if (last4_ == 0x0d0a0d0au) in_headers_ = false;
    }
  }
  return static_cast<ssize_t>(take);
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  while (true) {
    // The socket carries SO_SNDTIMEO (--http-write-timeout): a client that stops reading makes
    // send() fail rather than block forever. MSG_NOSIGNAL: a closed peer is an error, not SIGPIPE.
    const ssize_t n = ::send(connection_.fd_, ptr, size, MSG_NOSIGNAL);
    if (n >= 0 || errno != EINTR) return n;
  }
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage a{};
  socklen_t len = sizeof(a);
  if (::getpeername(connection_.fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) address_of(a, ip, port);
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage a{};
  socklen_t len = sizeof(a);
  if (::getsockname(connection_.fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) address_of(a, ip, port);
}

}  // namespace fg::server
