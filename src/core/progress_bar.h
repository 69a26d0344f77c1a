// core/progress_bar.h — one progress line on stderr for long operations (graph capture, a batch of
// requests, a load test). On a terminal it is redrawn in place, at most ten times a second; on a
// pipe or a file, where carriage returns would pile up as garbage, it prints one line when work
// starts and one when it ends; disabled (--no-progress), it prints nothing. A bar that never saw
// an update prints nothing at all.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>

namespace fg {

class ProgressBar {
 public:
  // total 0: given by the first update.
  ProgressBar(std::string label, size_t total, bool enabled, std::FILE* out = stderr);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // `done` of the total (a new total when non-zero), with a detail such as a rate ("123 tok/s").
  void update(size_t done, const std::string& detail = "", size_t total = 0);
  // The end line (also written by the destructor when not called).
  void finish(const std::string& detail = "");

 private:
  void draw(const std::string& detail, bool last);

  std::string label_;
  size_t total_, done_ = 0;
  bool enabled_, terminal_, started_ = false, finished_ = false;
  std::FILE* out_;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace fg
