// core/progress_bar.cpp — the in-place line on a terminal, start and end lines elsewhere.
#include "core/progress_bar.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

namespace fg {

ProgressBar::ProgressBar(std::string label, size_t total, bool enabled, std::FILE* out)
    : label_(std::move(label)), total_(total), enabled_(enabled), terminal_(isatty(fileno(out)) != 0), out_(out) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(size_t done, const std::string& detail, size_t total) {
  done_ = done;
  if (total != 0) total_ = total;
  if (!enabled_ || finished_) return;
  if (!started_) {
    started_ = true;
    if (!terminal_) fmt::print(out_, "{}: {} to do\n", label_, total_);
  }
  if (!terminal_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100) && done < total_) return;
  last_draw_ = now;
  draw(detail, false);
}

void ProgressBar::finish(const std::string& detail) {
  if (finished_) return;
  finished_ = true;
  if (!enabled_ || !started_) return;
  if (terminal_) {
    draw(detail, true);
  } else {
    fmt::print(out_, "{}: {}/{} done{}{}\n", label_, done_, total_, detail.empty() ? "" : ", ", detail);
    std::fflush(out_);
  }
}

void ProgressBar::draw(const std::string& detail, bool last) {
  constexpr size_t kWidth = 30;
  const size_t filled = total_ == 0 ? kWidth : kWidth * std::min(done_, total_) / total_;
  // \033[K clears what a longer earlier line left to the right.
  fmt::print(out_, "\r{} [{}{}] {}/{}{}{}\033[K{}", label_, std::string(filled, '#'), std::string(kWidth - filled, ' '),
             done_, total_, detail.empty() ? "" : " ", detail, last ? "\n" : "");
  std::fflush(out_);
}

}  // namespace fg
