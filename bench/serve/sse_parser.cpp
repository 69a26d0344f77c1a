// bench/serve/sse_parser.cpp — line splitting and field handling of the SSE stream.
#include "bench/serve/sse_parser.h"

namespace fg::bench {

std::vector<std::string> SseParser::feed(std::string_view bytes) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < bytes.size()) {
    const size_t nl = bytes.find('\n', start);
    if (nl == std::string_view::npos) {
      partial_line_.append(bytes.substr(start));
      break;
    }
    std::string_view piece = bytes.substr(start, nl - start);
    if (partial_line_.empty()) {
      take_line(piece, out);
    } else {
      partial_line_.append(piece);
      const std::string line = std::move(partial_line_);
      partial_line_.clear();
      take_line(line, out);
    }
    start = nl + 1;
  }
  return out;
}

std::vector<std::string> SseParser::finish() {
  std::vector<std::string> out;
  if (!partial_line_.empty()) {
    const std::string line = std::move(partial_line_);
    partial_line_.clear();
    take_line(line, out);
  }
  take_line("", out);  // the blank line the stream did not send
  return out;
}

void SseParser::take_line(std::string_view line, std::vector<std::string>& out) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty()) {
    if (has_data_) out.push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // a comment (keep-alive pings)
  const size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  if (field != "data") return;  // event, id, retry: nothing a completion stream needs
  std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (has_data_) data_.push_back('\n');
  data_.append(value);
  has_data_ = true;
}

}  // namespace fg::bench
