// tests/pty_session.h — a program run on a pseudo-terminal, as a person at a terminal runs it:
// its stdin is a terminal (so it may prompt and read lines), and what it writes, stdout and
// stderr together as a terminal shows them, is read against a deadline, so that a program that
// hangs fails the test instead of blocking it. Echo is off: the output holds only what the
// program wrote, with the terminal's "\r\n" read back as "\n".
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace fg::test {

class PtySession {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts `binary` with `args` (argv[1...]); `set_env` is set and `unset_env` removed in the
  // child's environment. started() says whether it ran.
  PtySession(const std::string& binary, const std::vector<std::string>& args,
             const std::vector<std::pair<std::string, std::string>>& set_env = {},
             const std::vector<std::string>& unset_env = {}) {
    pid_ = ::forkpty(&master_, nullptr, nullptr, nullptr);
    if (pid_ == 0) {
      for (const auto& [name, value] : set_env) ::setenv(name.c_str(), value.c_str(), 1);
      for (const auto& name : unset_env) ::unsetenv(name.c_str());
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(binary.c_str()));
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(binary.c_str(), argv.data());
      ::_exit(127);
    }
    if (pid_ < 0) return;
    // Before anything is sent, so no input is ever echoed.
    termios t{};
    if (::tcgetattr(master_, &t) == 0) {
      t.c_lflag &= ~static_cast<tcflag_t>(ECHO);
      ::tcsetattr(master_, TCSANOW, &t);
    }
  }
  PtySession(const PtySession&) = delete;
  PtySession& operator=(const PtySession&) = delete;

  ~PtySession() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) ::close(master_);
  }

  bool started() const { return pid_ > 0; }

  // Everything the program wrote after what earlier calls returned, up to and including the
  // first `marker`; nullopt when the deadline passes or the program closes the terminal first
  // (output() then holds what came).
  std::optional<std::string> read_until(const std::string& marker, std::chrono::milliseconds timeout) {
    const Clock::time_point deadline = Clock::now() + timeout;
    while (true) {
      const size_t at = pending_.find(marker);
      if (at != std::string::npos) {
        std::string out = pending_.substr(0, at + marker.size());
        pending_.erase(0, at + marker.size());
        return out;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0 || !read_some(left)) return std::nullopt;
    }
  }

  // What was read and not yet returned by read_until.
  const std::string& output() const { return pending_; }

  // Types `line` and Enter.
  void send_line(const std::string& line) { write_all(line + "\n"); }
  // Ctrl-D at the start of a line: the end of input.
  void send_eof() { write_all("\x04"); }

  // Waits for the program to end; its exit code, or -1 when it was killed by a signal or is still
  // running at the deadline.
  int wait_exit(std::chrono::milliseconds timeout) {
    const Clock::time_point deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      // Drains the output meanwhile: a program blocked on a full terminal would never end.
      if (!read_some(std::chrono::milliseconds(20))) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

 private:
  // Reads what is there within `timeout`; false on timeout, or when the terminal closed.
  bool read_some(std::chrono::milliseconds timeout) {
    pollfd p{master_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
    char buffer[4096];
    const ssize_t n = ::read(master_, buffer, sizeof buffer);
    if (n <= 0) return false;  // EIO: the program closed the terminal
    for (ssize_t i = 0; i < n; ++i)
      if (buffer[i] != '\r') pending_.push_back(buffer[i]);
    return true;
  }

  void write_all(const std::string& text) {
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(master_, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }

  int master_ = -1;
  pid_t pid_ = -1;
  bool exited_ = false;
  std::string pending_;
};

}  // namespace fg::test
